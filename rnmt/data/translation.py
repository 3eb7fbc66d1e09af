"""Batching sentences for translation: sort by length, batch by tokens, restore order."""

from __future__ import annotations

from typing import Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy as np
import torch

from rnmt.data.collate import pad_sequences
from rnmt.data.sampler import pack_sorted
from rnmt.data.vocab import EOS_ID, PAD_ID

T = TypeVar("T")


def make_translation_batches(
    sentences: Sequence[Sequence[int]],
    max_tokens: int,
    max_sentences: Optional[int] = None,
    add_eos: bool = True,
) -> Iterator[Tuple[List[int], torch.Tensor, torch.Tensor]]:
    """Yield ``(indices, src [B,S], src_mask [B,S])`` batches over `sentences`.

    `sentences` are source id lists as `Vocab.encode` returns them; ``</s>`` is appended
    when `add_eos`, so an empty input line becomes ``[</s>]`` and still gets a
    translation. Sentences are sorted longest first (an out-of-memory shows up on the
    first batch), and ``B * S <= max_tokens`` holds unless one sentence alone is longer.
    `indices` are positions in `sentences`; put results back with `restore_order`.
    """
    seqs = [np.asarray(list(s) + ([EOS_ID] if add_eos else []), dtype=np.int64) for s in sentences]
    lens = [len(s) for s in seqs]
    # Stable sort, longest first; equal lengths keep input order.
    order = sorted(range(len(seqs)), key=lambda i: -lens[i])
    for idx in pack_sorted(order, lens, [0] * len(seqs), max_tokens, max_sentences):
        src = torch.from_numpy(pad_sequences([seqs[i] for i in idx]))
        yield idx, src, src != PAD_ID


def restore_order(indices: Sequence[Sequence[int]], results: Sequence[Sequence[T]]) -> List[T]:
    """Undo the sorting: `results[b][k]` belongs to input ``indices[b][k]``."""
    n = sum(len(idx) for idx in indices)
    out: List[Optional[T]] = [None] * n
    for idx, res in zip(indices, results):
        if len(idx) != len(res):
            raise ValueError(f"batch of {len(idx)} sentences has {len(res)} results")
        for i, r in zip(idx, res):
            out[i] = r
    return out  # type: ignore[return-value]
