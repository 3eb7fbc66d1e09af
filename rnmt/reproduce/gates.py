"""Input and forget gates of every ATR unit of a model, over a test set (ATR paper, §5.1).

The gates are recorded here from the outside, not through the model's declared reports
(`rnmt.models.reports`, what ``rnmt analyze`` uses): each ATR unit's ``step`` is wrapped
for the duration of one teacher-forced ``forward`` (of the references), and every call's
i and f are kept. This covers every ATR unit that is stepped once per position, including
the three of the context-aware encoder, which ``reports()`` leaves out: encoder units walk
the source (backward ones in reverse), decoder units walk the target. The statistics are those of ``rnmt analyze``:
hidden-unit means per (sentence, position), Pearson's r over all pairs, and position-wise
means for the figure.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterator, List, Sequence

import numpy as np
import torch

from rnmt.analysis.atr import pearson, position_means
from rnmt.cells.atr import ATR
from rnmt.data import make_translation_batches
from rnmt.data.collate import pad_sequences
from rnmt.data.vocab import BOS_ID


def _walks_backward(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("bwd") or last.startswith("backward")


@contextmanager
def recording(model: torch.nn.Module) -> Iterator[Dict[str, List[tuple]]]:
    """Within the block, every step of every ATR unit appends (i, f) to ``calls[name]``."""
    calls: Dict[str, List[tuple]] = {}
    wrapped = []
    for name, module in model.named_modules():
        if isinstance(module, ATR):
            calls[name] = []

            def step(px, state, return_gates=False, _unit=module, _log=calls[name]):
                new, gates = type(_unit).step(_unit, px, state, True)
                _log.append((gates["i"].float().mean(-1), gates["f"].float().mean(-1)))
                return (new, gates) if return_gates else new

            module.step = step  # an instance attribute shadows the class's method
            wrapped.append(module)
    try:
        yield calls
    finally:
        for module in wrapped:
            del module.step


@torch.no_grad()
def atr_gate_statistics(model: torch.nn.Module, src_ids: Sequence[Sequence[int]],
                        tgt_ids: Sequence[Sequence[int]], device: torch.device,
                        batch_tokens: int = 2000) -> Dict[str, dict]:
    """Per ATR unit: Pearson's r of the (hidden-unit mean) input and forget gates over all
    (sentence, position) pairs, and the position-wise means (ATR paper, Fig. 3)."""
    model.eval()
    per_unit_i: Dict[str, List[np.ndarray]] = {}
    per_unit_f: Dict[str, List[np.ndarray]] = {}
    for idx, src, mask in make_translation_batches(src_ids, batch_tokens):
        src, mask = src.to(device), mask.to(device)
        tgts = [np.asarray(tgt_ids[n], dtype=np.int64) for n in idx]
        tgt_in = torch.from_numpy(pad_sequences(tgts, prefix=BOS_ID)).to(device)
        with recording(model) as calls:
            model(src, mask, tgt_in)
        src_lens = mask.sum(1).tolist()
        tgt_lens = [len(t) + 1 for t in tgts]  # BOS + the target: one step per predicted token
        for name, log in calls.items():
            if not log:
                continue
            i = torch.stack([c[0] for c in log], 1).cpu().numpy()  # [B, steps]
            f = torch.stack([c[1] for c in log], 1).cpu().numpy()
            if i.shape[1] == src.size(1) and name.startswith("encoder"):
                lengths = src_lens
                if _walks_backward(name):
                    i, f = i[:, ::-1], f[:, ::-1]  # recorded in walking order: back to positions
            elif i.shape[1] == tgt_in.size(1):
                lengths = tgt_lens
            else:
                continue  # a unit stepped some other way: not a per-position chain
            for b, n in enumerate(lengths):
                per_unit_i.setdefault(name, []).append(np.array(i[b, :n]))
                per_unit_f.setdefault(name, []).append(np.array(f[b, :n]))
    # Display names: decoder units get a "decoder." prefix.
    named_i = {(n if n.startswith("encoder") else f"decoder.{n}"): v for n, v in per_unit_i.items()}
    named_f = {(n if n.startswith("encoder") else f"decoder.{n}"): v for n, v in per_unit_f.items()}
    out = {}
    for name in named_i:
        seq_i, seq_f = named_i[name], named_f[name]
        all_i, all_f = np.concatenate(seq_i), np.concatenate(seq_f)
        mean_i, count = position_means(seq_i)
        mean_f, _ = position_means(seq_f)
        out[name] = {"pearson_r": pearson(all_i, all_f), "pairs": int(all_i.size),
                     "pearson_r_of_position_means": pearson(mean_i, mean_f),
                     "input": mean_i.tolist(), "forget": mean_f.tolist(), "count": count.tolist()}
    return out
