"""Rebuilding a trained model from its checkpoint, and counting parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict

import torch

from rnmt.config import Config
from rnmt.data.vocab import Vocab
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import load_state_into, read_model_file
from rnmt.models.base import TranslationModel
from rnmt.models.registry import build_model


@dataclass
class LoadedModel:
    model: TranslationModel
    src_vocab: Vocab
    tgt_vocab: Vocab
    config: Config
    meta: Dict[str, Any]
    path: Path


def load_model(path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Load a model directory (its best checkpoint) or a checkpoint file, in eval mode."""
    mf = read_model_file(Path(path))
    if "src" not in mf.vocabs or "tgt" not in mf.vocabs:
        raise UserError(f"{mf.path}: checkpoint has no vocabulary")
    src_vocab, tgt_vocab = Vocab.from_bytes(mf.vocabs["src"]), Vocab.from_bytes(mf.vocabs["tgt"])
    model = build_model(mf.config.model, src_vocab.size, tgt_vocab.size)
    load_state_into(model, mf.state, mf.path)
    model.to(device).eval()
    return LoadedModel(model, src_vocab, tgt_vocab, mf.config, mf.meta, mf.path)


def count_parameters(model: torch.nn.Module) -> Dict[str, int]:
    """Parameters per top-level component and ``total``; tied tensors count once, in the
    component that owns them first."""
    seen, counts = set(), {}
    for name, child in model.named_children():
        n = 0
        for p in child.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        if n:
            counts[name] = n
    for name, p in model.named_parameters(recurse=False):
        if id(p) not in seen:
            seen.add(id(p))
            counts[name] = p.numel()
    counts["total"] = sum(v for k, v in counts.items())
    return counts
