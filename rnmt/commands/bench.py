"""rnmt bench CONFIG [--steps N] [--units]: training/decoding throughput and unit step times."""

from __future__ import annotations

import argparse
import json
import tempfile

from rnmt.commands import checks
from rnmt.config import load_config
from rnmt.errors import UserError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", nargs="?", help="YAML config whose model and data are measured")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--steps", type=int, default=30, help="timed training steps (after --warmup)")
    p.add_argument("--warmup", type=int, default=5, help="untimed training steps first")
    p.add_argument("--decode-sentences", type=int, default=100, help="sentences to beam-decode")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--model", help="decode with this trained model instead of a fresh one")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--units", action="store_true", help="also time every unit of rnmt.cells")
    p.add_argument("--unit-batch", type=int, default=64)
    p.add_argument("--unit-length", type=int, default=50)
    p.add_argument("--unit-size", type=int, default=512)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    checks.at_least(args, 1, "steps", "beam", "unit_batch", "unit_length", "unit_size")
    checks.at_least(args, 0, "warmup", "decode_sentences")
    checks.use_threads(args.threads)
    if not args.config and not args.units:
        raise UserError("rnmt bench needs a CONFIG to time, --units, or both")
    report = {}
    if args.config:
        from rnmt.bench.throughput import benchmark_config

        cfg = load_config(args.config, args.overrides)
        cfg.train.threads = args.threads
        with tempfile.TemporaryDirectory(prefix="rnmt-bench-") as work:
            report["model"] = benchmark_config(cfg, work, steps=args.steps, warmup=args.warmup,
                                               decode_sentences=args.decode_sentences, beam=args.beam,
                                               model_path=args.model, device=args.device)
    if args.units:
        from rnmt.bench.cells import benchmark_cells
        from rnmt.cells import CELL_NAMES

        names = [n for n in CELL_NAMES if n != "transition"] + ["torch-gru", "torch-lstm"]
        report["units"] = benchmark_cells(names, batch=args.unit_batch, length=args.unit_length,
                                          size=args.unit_size, threads=args.threads)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
        return 0
    if "model" in report:
        m = report["model"]
        print(f"{m['arch']} ({m['cell']}), {m['params']:,} parameters, {m['threads']} threads")
        print(f"  training: {m['train_tokens_per_s']:.0f} target tokens/s over {m['train_steps']} steps")
        print(f"  decoding (beam {args.beam}): {m['decode_sentences_per_s']:.2f} sentences/s, "
              f"{m['decode_tokens_per_s']:.1f} tokens/s")
        print(f"  peak RSS: {m['peak_rss_mb']:.0f} MB")
    for row in report.get("units", []):
        print("  " + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    return 0
