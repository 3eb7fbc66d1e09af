"""Turning pair indices into padded tensors (right padding, ``<pad>`` = 0)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import List, Optional, Sequence, Union

import numpy as np
import torch

from rnmt.data.corpus import EncodedCorpus
from rnmt.data.vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Batch:
    """One training batch.

    src [B,S], tgt_in [B,T] (``<s> y``), tgt_out [B,T] (``y </s>``) are LongTensors;
    the masks are bool, True on real tokens. `src_lens` [B] counts source tokens incl.
    ``</s>``; `indices` are the pairs' corpus indices; `ntokens` the real target tokens.
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    src_lens: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor
    indices: List[int]
    ntokens: int

    @property
    def size(self) -> int:
        """Number of sentence pairs (B)."""
        return len(self.indices)

    def to(self, device: Union[str, torch.device], non_blocking: bool = False) -> Batch:
        """A copy with every tensor on `device`."""
        moved = {f.name: getattr(self, f.name).to(device, non_blocking=non_blocking)
                 for f in fields(self) if isinstance(getattr(self, f.name), torch.Tensor)}
        return replace(self, **moved)

    def pin_memory(self) -> Batch:
        """A copy in page-locked memory, for faster asynchronous copies to a GPU."""
        pinned = {f.name: getattr(self, f.name).pin_memory()
                  for f in fields(self) if isinstance(getattr(self, f.name), torch.Tensor)}
        return replace(self, **pinned)


def pad_sequences(seqs: Sequence[np.ndarray], prefix: Optional[int] = None,
                  suffix: Optional[int] = None) -> np.ndarray:
    """Right-pad id sequences into an int64 [B, L] array, optionally framing each one."""
    extra = (prefix is not None) + (suffix is not None)
    width = max((len(s) for s in seqs), default=0) + extra
    out = np.full((len(seqs), width), PAD_ID, dtype=np.int64)
    start = int(prefix is not None)
    for row, seq in enumerate(seqs):
        if prefix is not None:
            out[row, 0] = prefix
        out[row, start:start + len(seq)] = seq
        if suffix is not None:
            out[row, start + len(seq)] = suffix
    return out


def collate(corpus: EncodedCorpus, indices: Sequence[int],
            device: Optional[Union[str, torch.device]] = None) -> Batch:
    """Build the `Batch` of pairs `indices` from `corpus` (on `device` if given)."""
    indices = [int(i) for i in indices]
    srcs = [corpus.src_ids(i) for i in indices]
    tgts = [corpus.tgt_ids(i) for i in indices]
    src = torch.from_numpy(pad_sequences(srcs))
    tgt_in = torch.from_numpy(pad_sequences(tgts, prefix=BOS_ID))
    tgt_out = torch.from_numpy(pad_sequences(tgts, suffix=EOS_ID))
    src_lens = torch.tensor([len(s) for s in srcs], dtype=torch.long)
    tgt_mask = tgt_out != PAD_ID
    batch = Batch(src=src, src_mask=src != PAD_ID, src_lens=src_lens, tgt_in=tgt_in,
                  tgt_out=tgt_out, tgt_mask=tgt_mask, indices=indices, ntokens=int(tgt_mask.sum()))
    return batch.to(device) if device is not None else batch
