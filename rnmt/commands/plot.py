"""rnmt plot RUN [RUN ...] --out curves.png [--label NAME ...] [--title T]

Training loss and dev BLEU of one or several runs against updates and against training
minutes, from each run's ``log.jsonl`` (rnmt/analysis/curves.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rnmt.commands import checks
from rnmt.errors import UserError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="training output directory (or its log.jsonl)")
    p.add_argument("--out", required=True, help="PNG file to write")
    p.add_argument("--label", action="append", default=[], metavar="NAME",
                   help="legend name of each run, in order (default: the directory names)")
    p.add_argument("--title", help="figure title")


def run(args: argparse.Namespace) -> int:
    from rnmt.analysis.curves import plot_curves, read_curves

    if args.label and len(args.label) != len(args.runs):
        raise UserError(f"{len(args.label)} --label for {len(args.runs)} runs; give one per run or none")
    logs = [str(Path(run) / "log.jsonl") if Path(run).is_dir() else run for run in args.runs]
    checks.output_apart("--out", args.out, [("RUN", logs)])
    labels = args.label or [None] * len(args.runs)
    curves = [read_curves(run, name) for run, name in zip(args.runs, labels)]
    path = plot_curves(curves, args.out, args.title)
    for c in curves:
        best = f", best dev BLEU {max(c.dev_bleu):.2f}" if c.dev_bleu else ""
        last = f"{c.steps[-1]} updates in {c.minutes[-1]:.1f} min" if c.steps else "no training records"
        skipped = f" ({c.skipped_lines} lines skipped: not records, e.g. cut by a kill)" if c.skipped_lines else ""
        print(f"{c.name}: {last}{best}{skipped}")
    print(f"wrote {path}")
    return 0
