"""Rebuilding a trained model from its checkpoint, and counting parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict

import torch

from rnmt.config import Config
from rnmt.data.vocab import Vocab
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import ModelFile, load_state_into, read_model_file
from rnmt.models.base import TranslationModel
from rnmt.models.registry import build_model, build_skeleton


@dataclass
class LoadedModel:
    model: TranslationModel
    src_vocab: Vocab
    tgt_vocab: Vocab
    config: Config
    meta: Dict[str, Any]
    path: Path


def file_vocabularies(mf: ModelFile) -> tuple:
    """The source and target vocabularies a checkpoint carries (one-line errors)."""
    vocabs = []
    for side in ("src", "tgt"):
        blob = mf.vocabs.get(side)
        if blob is None:
            raise UserError(f"{mf.path}: checkpoint has no vocabulary")
        try:
            vocabs.append(Vocab.from_bytes(blob))
        except UserError as exc:  # said of "vocabulary bytes": name the checkpoint and the side
            raise UserError(f"{mf.path}: the {side} vocabulary in the checkpoint: "
                            f"{str(exc).removeprefix('vocabulary bytes: ')}") from None
        except Exception:
            raise UserError(f"{mf.path}: the {side} vocabulary in the checkpoint is damaged") from None
    return tuple(vocabs)


def check_shapes(mf: ModelFile, src_size: int, tgt_size: int) -> None:
    """Compare the file's tensors with the model its config describes, built on the meta
    device (shapes only, no memory), so a config asking for a huge model is rejected before
    anything is allocated for it."""
    try:
        skeleton = build_skeleton(mf.config.model, src_size, tgt_size)
    except UserError as exc:
        raise UserError(f"{mf.path}: {exc}") from None
    load_state_into(skeleton, mf.state, mf.path, assign=False)


def read_checked(path: str | Path) -> tuple:
    """(model file, source vocabulary, target vocabulary) of a checkpoint whose tensors
    match the model its config describes."""
    mf = read_model_file(Path(path))
    src_vocab, tgt_vocab = file_vocabularies(mf)
    check_shapes(mf, src_vocab.size, tgt_vocab.size)
    return mf, src_vocab, tgt_vocab


def load_model(path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Load a model directory (its best checkpoint) or a checkpoint file, in eval mode."""
    mf, src_vocab, tgt_vocab = read_checked(path)
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
