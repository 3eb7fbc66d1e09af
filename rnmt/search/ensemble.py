"""Ensemble decoding: several models as one `TranslationModel`.

Member i keeps its memory and state tensors under keys prefixed ``"i."`` in the flat dicts
the search works on, so beam search repeats, reorders and shrinks every member's tensors
with its generic `select` and never knows it is driving an ensemble. Each step returns the
mean of the members' log-probabilities (the log of the geometric mean of their
distributions, not renormalised), and the mean of any extra (attention weights, ...) that
every member returns with the same shape.

Members must share the target vocabulary (their output ids must mean the same words) and,
since one source encoding feeds them all, the source vocabulary as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Sequence, Tuple, cast

import torch
from torch import Tensor, nn

from rnmt.errors import UserError
from rnmt.models.base import TensorDict, TranslationModel


def _prefixed(tree: TensorDict, i: int) -> TensorDict:
    return {f"{i}.{k}": v for k, v in tree.items()}


def _member(tree: TensorDict, i: int) -> TensorDict:
    prefix = f"{i}."
    return {k[len(prefix):]: v for k, v in tree.items() if k.startswith(prefix)}


class Ensemble(TranslationModel):
    """Averages the per-step log-probabilities of its members."""

    def __init__(self, members: Sequence[TranslationModel]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one model")
        first = members[0]
        for m in members[1:]:
            if (m.pad_id, m.bos_id, m.eos_id) != (first.pad_id, first.bos_id, first.eos_id):
                raise UserError("ensemble members use different special token ids")
        self.members = nn.ModuleList(members)
        self.pad_id, self.bos_id, self.eos_id = first.pad_id, first.bos_id, first.eos_id
        self.beam_shares_memory = all(m.beam_shares_memory for m in members)

    @property
    def models(self) -> List[TranslationModel]:
        """The members with their type (an nn.ModuleList holds them as plain modules)."""
        return cast(List[TranslationModel], list(self.members))

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        memory: TensorDict = {}
        for i, m in enumerate(self.models):
            memory.update(_prefixed(m.encode(src, src_mask), i))
        return memory

    def init_state(self, memory: TensorDict) -> TensorDict:
        state: TensorDict = {}
        for i, m in enumerate(self.models):
            state.update(_prefixed(m.init_state(_member(memory, i)), i))
        return state

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict, TensorDict]:
        log_probs: List[Tensor] = []
        extras: List[TensorDict] = []
        new_state: TensorDict = {}
        for i, m in enumerate(self.models):
            lp, st, ex = m.step(prev_tokens, _member(state, i), _member(memory, i))
            log_probs.append(lp)
            extras.append(ex or {})
            new_state.update(_prefixed(st, i))
        sizes = {lp.size(-1) for lp in log_probs}
        if len(sizes) > 1:
            raise UserError(f"ensemble members have different target vocabulary sizes: {sorted(sizes)}")
        mean = torch.stack(log_probs).mean(0)
        return mean, new_state, _mean_extras(extras)

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced mean log-probabilities (what `step` returns, for all positions)."""
        return torch.stack([m.target_log_probs(src, src_mask, tgt_in) for m in self.models]).mean(0)

    def target_log_probs(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        return self(src, src_mask, tgt_in)  # already the members' mean log-probabilities, as `step`


def _mean_extras(extras: List[TensorDict]) -> TensorDict:
    out: TensorDict = {}
    for key in extras[0]:
        values = [ex.get(key) for ex in extras]
        tensors = [v for v in values if isinstance(v, Tensor)]
        if len(tensors) == len(values) and all(v.shape == tensors[0].shape for v in tensors):
            out[key] = torch.stack([v.float() for v in tensors]).mean(0).to(tensors[0].dtype)
    return out


def load_ensemble(paths: Sequence[str | Path], device: str | torch.device = "cpu"):
    """Load several checkpoints (files or run directories) as one `Ensemble`.

    Returns a `LoadedModel` whose config (search options) is the first member's. The
    members' vocabularies are compared byte for byte: a mismatch is a `UserError` naming
    both checkpoints.
    """
    from rnmt.models.loading import LoadedModel, load_model

    loaded = [load_model(p, device) for p in paths]
    first = loaded[0]
    for other in loaded[1:]:
        for side, name in (("tgt_vocab", "target"), ("src_vocab", "source")):
            if getattr(other, side).to_bytes() != getattr(first, side).to_bytes():
                hint = "" if side == "tgt_vocab" else " (one source encoding feeds every member)"
                raise UserError(f"cannot ensemble {first.path} and {other.path}: their {name} vocabularies "
                                f"differ{hint}")
    if len(loaded) == 1:
        return first
    model = Ensemble([m.model for m in loaded]).to(device).eval()
    meta = {"members": [str(m.path) for m in loaded]}
    return LoadedModel(model, first.src_vocab, first.tgt_vocab, first.config, meta, first.path)
