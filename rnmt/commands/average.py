"""rnmt average CKPT [CKPT ...] --out AVG.safetensors"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoints", nargs="+", help="checkpoint files (or run directories) of the same model")
    p.add_argument("--out", required=True, help="where to write the averaged checkpoint")


def run(args: argparse.Namespace) -> int:
    from rnmt.training.average import average_checkpoints

    meta = average_checkpoints(args.checkpoints, args.out)
    print(f"averaged {len(args.checkpoints)} checkpoints (steps {meta['steps']}) into {args.out}", file=sys.stderr)
    return 0
