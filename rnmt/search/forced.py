"""Forced decoding: score given target sentences with a model's own `step`, keeping what
each step reports.

The decoder is fed ``<s> y_1 .. y_J`` (teacher forcing) and must produce ``y_1 .. y_J </s>``:
J + 1 steps per sentence. For every step the result keeps the log-probability of the forced
token and the step's extras over the source tokens (``attention`` [B, S]; the per-source
gate means ``source_gates`` = {"z": [B, S], "r": [B, S]} of models that provide them).
Source sentences get ``</s>`` appended as in translation, so the matrices are
``[J + 1, S + 1]``: the last row is the end-of-sentence step, the last column the source
``</s>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch

from rnmt.data import make_translation_batches, restore_order
from rnmt.data.collate import pad_sequences
from rnmt.data.vocab import BOS_ID, EOS_ID
from rnmt.models.base import TranslationModel


@dataclass
class ForcedDecoding:
    """One forced-decoded pair (ids without ``</s>``)."""

    src_ids: List[int]
    tgt_ids: List[int]
    token_log_probs: np.ndarray  # [J + 1]: log p(y_j | y_<j, x), the last one for </s>
    attention: Optional[np.ndarray] = None  # [J + 1, S + 1]
    source_gates: Dict[str, np.ndarray] = field(default_factory=dict)  # name -> [J + 1, S + 1]

    @property
    def score(self) -> float:
        return float(self.token_log_probs.sum())


def _source_gates(extras: dict) -> Dict[str, torch.Tensor]:
    gates = extras.get("source_gates")
    if isinstance(gates, dict):
        return {k: v for k, v in gates.items() if torch.is_tensor(v)}
    return {}


Batch = Tuple[List[int], torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _batches(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], batch_tokens: int,
             device: str | torch.device) -> Iterator[Batch]:
    """The pairs in translation batches on ``device``: (indices, source, source mask, decoder
    input ``<s> y``, expected output ``y </s>``)."""
    for idx, src, mask in make_translation_batches(sources, batch_tokens):
        tgts = [np.asarray(targets[i], dtype=np.int64) for i in idx]
        tgt_in = torch.from_numpy(pad_sequences(tgts, prefix=BOS_ID)).to(device)
        tgt_out = torch.from_numpy(pad_sequences(tgts, suffix=EOS_ID)).to(device)
        yield idx, src.to(device), mask.to(device), tgt_in, tgt_out


@torch.no_grad()
def forced_log_probs(model: TranslationModel, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]],
                     batch_tokens: int = 4000, device: str | torch.device = "cpu") -> List[np.ndarray]:
    """Only the log-probabilities of forced decoding ([J + 1] per pair, the last one for
    ``</s>``), from one teacher-forced pass per batch (`TranslationModel.target_log_probs`):
    the input and readout products of all positions at once instead of one step at a time.
    The values are ``step``'s up to rounding. An int8-quantised model (`rnmt.int8`) goes step
    by step with `forced_decode`, so its scores are those of the products its search used.
    Results in input order."""
    from rnmt.int8 import is_quantized

    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if is_quantized(model):
        return [fd.token_log_probs for fd in forced_decode(model, sources, targets, batch_tokens, device)]
    was_training = model.training
    model.eval()
    batch_indices, batch_results = [], []
    try:
        for idx, src, mask, tgt_in, tgt_out in _batches(sources, targets, batch_tokens, device):
            log_probs = model.target_log_probs(src, mask, tgt_in)
            picked = log_probs.gather(2, tgt_out.unsqueeze(2)).squeeze(2).cpu().numpy()
            batch_indices.append(idx)
            batch_results.append([picked[b, :len(targets[i]) + 1] for b, i in enumerate(idx)])
    finally:
        model.train(was_training)
    return restore_order(batch_indices, batch_results) if batch_indices else []


@torch.no_grad()
def forced_decode(model: TranslationModel, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]],
                  batch_tokens: int = 4000, device: str | torch.device = "cpu") -> List[ForcedDecoding]:
    """Force-decode every (source ids, target ids) pair; results in input order."""
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    was_training = model.training
    model.eval()
    # Cyclic models report their re-reading unit's gates per source position only on request.
    had_gates = getattr(model, "report_source_gates", None)
    if had_gates is not None:
        model.report_source_gates = True  # type: ignore[assignment]  # a plain bool attribute
    batch_indices, batch_results = [], []
    try:
        for idx, src, mask, tgt_in, tgt_out in _batches(sources, targets, batch_tokens, device):
            memory = model.encode(src, mask)
            state = model.init_state(memory)
            logps: List[torch.Tensor] = []
            attn: List[torch.Tensor] = []
            gates: Dict[str, List[torch.Tensor]] = {}
            for j in range(tgt_in.size(1)):
                log_probs, state, extras = model.step(tgt_in[:, j], state, memory)
                logps.append(log_probs.gather(1, tgt_out[:, j:j + 1]).squeeze(1))
                if "attention" in extras:
                    attn.append(extras["attention"].float())
                for name, value in _source_gates(extras).items():
                    gates.setdefault(name, []).append(value.float())
            logp = torch.stack(logps, 1).cpu().numpy()
            attn_all = torch.stack(attn, 1).cpu().numpy() if attn else None
            gates_all = {k: torch.stack(v, 1).cpu().numpy() for k, v in gates.items()}
            results = []
            for b, i in enumerate(idx):
                J, S = len(targets[i]) + 1, len(sources[i]) + 1
                results.append(ForcedDecoding(
                    list(sources[i]), list(targets[i]), logp[b, :J],
                    None if attn_all is None else attn_all[b, :J, :S],
                    {k: v[b, :J, :S] for k, v in gates_all.items()}))
            batch_indices.append(idx)
            batch_results.append(results)
    finally:
        if had_gates is not None:
            model.report_source_gates = had_gates
        model.train(was_training)
    return restore_order(batch_indices, batch_results) if batch_indices else []
