"""rnmt params CONFIG [--json] [--set ...]: parameter counts from the config alone.

CONFIG is a YAML file or a built-in config by name (``atr/rnnsearch-atr``). The vocabulary
sizes come from ``model.src_vocab_size`` / ``tgt_vocab_size`` when the config names them,
else from ``data.vocab``: the sizes of its sentencepiece model files, or the sizes a
vocabulary trained from the data will have (``data.vocab.size``, ``src_size``, ``tgt_size``).
"""

from __future__ import annotations

import argparse
import json

from rnmt.config import Config, load_config
from rnmt.errors import UserError
from rnmt.models import build_skeleton, count_parameters


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML config file or built-in config name, e.g. atr/rnnsearch-atr")
    p.add_argument("--json", action="store_true", help="print a JSON object with an integer 'total'")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    cfg.model.src_vocab_size, cfg.model.tgt_vocab_size = vocab_sizes(cfg)
    model = build_skeleton(cfg.model)  # shapes only: no memory, no initialisation
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


def vocab_sizes(cfg: Config) -> tuple:
    """(source, target) vocabulary sizes: the model's own, else what ``data.vocab`` gives."""
    m, vc = cfg.model, cfg.data.vocab
    if m.src_vocab_size and m.tgt_vocab_size:
        return m.src_vocab_size, m.tgt_vocab_size
    if vc.model or vc.src_model or vc.tgt_model:
        from rnmt.data import load_vocab  # sentencepiece only when a model file is named

        if vc.model:
            size = load_vocab(vc.model).size
            return m.src_vocab_size or size, m.tgt_vocab_size or size
        if not (vc.src_model and vc.tgt_model):
            raise UserError("data.vocab.src_model and data.vocab.tgt_model must be given together")
        return (m.src_vocab_size or load_vocab(vc.src_model).size,
                m.tgt_vocab_size or load_vocab(vc.tgt_model).size)
    # A vocabulary trained from the data has exactly the requested number of pieces; a
    # joint one is trained at the source size (as the trainer does).
    src = vc.src_size or vc.size
    tgt = src if vc.joint else (vc.tgt_size or vc.size)
    return m.src_vocab_size or src, m.tgt_vocab_size or tgt
