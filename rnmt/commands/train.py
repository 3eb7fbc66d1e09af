"""rnmt train CONFIG.yaml [--out DIR] [--set key.path=value ...] [--resume] [--accumulate K]

Data-parallel training: ``torchrun --nproc-per-node N -m rnmt train CONFIG ...``
(docs/scaling.md).
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML config file or built-in config name (quickstart, atr/rnnsearch-atr)")
    p.add_argument("--out", help="output directory (default: runs/<config name>)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.max_steps=100 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    p.add_argument("--accumulate", type=int, metavar="K",
                   help="accumulate the gradients of K batches per update and process "
                        "(sets train.accumulate; K = N on one process matches N processes)")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import train
    from rnmt.errors import UserError

    if args.accumulate is not None and args.accumulate < 1:
        raise UserError(f"--accumulate must be at least 1, got {args.accumulate}")
    overrides = list(args.overrides)
    if args.accumulate is not None:
        overrides.append(f"train.accumulate={args.accumulate}")
    train(args.config, overrides, out=args.out, resume=args.resume)
    return 0
