"""rnmt params CONFIG.yaml [--json] [--set ...]: parameter counts from the config alone."""

from __future__ import annotations

import argparse
import json

import torch

from rnmt.config import load_config
from rnmt.models import build_model, count_parameters


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML config file (model.src_vocab_size / tgt_vocab_size must be set)")
    p.add_argument("--json", action="store_true", help="print a JSON object with an integer 'total'")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        model = build_model(cfg.model)
    counts = count_parameters(model)
    if args.json:
        print(json.dumps({"arch": cfg.model.arch, "cell": cfg.model.cell, **counts}))
        return 0
    width = max(len(k) for k in counts)
    print(f"{cfg.model.arch} ({cfg.model.cell}), vocab {cfg.model.src_vocab_size}/{cfg.model.tgt_vocab_size}, "
          f"emb {cfg.model.emb_size}, hidden {cfg.model.hidden_size}")
    for name, n in counts.items():
        if name != "total":
            print(f"  {name:<{width}}  {n:>13,}")
    print(f"  {'total':<{width}}  {counts['total']:>13,}  ({counts['total'] / 1e6:.2f}M)")
    return 0
