"""rnmt average CKPT [CKPT ...] --out AVG.safetensors | rnmt average RUN [RUN ...] --last N --out AVG"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoints", nargs="+", help="checkpoint files (or run directories) of the same model")
    p.add_argument("--last", type=int, metavar="N",
                   help="each argument is a run directory: average its N step checkpoints with the highest steps")
    p.add_argument("--out", required=True, help="where to write the averaged checkpoint")


def run(args: argparse.Namespace) -> int:
    from rnmt.training.average import average_checkpoints, last_checkpoints

    paths = args.checkpoints
    if args.last is not None:
        paths = [p for run_dir in args.checkpoints for p in last_checkpoints(run_dir, args.last)]
    meta = average_checkpoints(paths, args.out)
    print(f"averaged {len(paths)} checkpoints (steps {meta['steps']}) into {args.out}", file=sys.stderr)
    return 0
