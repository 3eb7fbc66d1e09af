"""Example inputs to trace and check the graphs with: padded source batches and decoder rows.

Tracing records the sizes of its example only where a size is read as a constant; the
names of the dynamic axes are found by matching sizes (`rnmt.export.onnx_writer.dynamic_axes`).
So the traced source length is one no weight of the model has as a dimension, and the
parity check (`rnmt.export.parity`) runs on other batch sizes and lengths than the trace's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import torch
from torch import Tensor, nn

from rnmt.data.vocab import EOS_ID

TRACE_BATCH, TRACE_BEAM = 3, 2  # memory rows and state rows per memory row of the trace


@dataclass(frozen=True)
class Shapes:
    batch: int  # B: source rows
    length: int  # S: source subwords, end mark included
    beam: int  # K: state rows per source row (1 when the model repeats its memory instead)


def trace_length(model: nn.Module, start: int = 11) -> int:
    """A source length that is no dimension of any parameter of ``model`` (from ``start`` up)."""
    dims = {size for p in model.parameters() for size in p.shape}
    dims.update({TRACE_BATCH, TRACE_BATCH * TRACE_BEAM})
    length = start
    while length in dims:
        length += 1
    return length


def source_batch(shapes: Shapes, src_vocab: int, seed: int = 0) -> Tuple[Tensor, Tensor]:
    """``src`` [B, S] of random subwords, each row ending in ``</s>`` then padding, the first
    row full and the others shorter (at least one subword), with ``src_mask`` [B, S]."""
    g = torch.Generator().manual_seed(seed)
    B, S = shapes.batch, shapes.length
    src = torch.randint(4, max(src_vocab, 5), (B, S), generator=g)
    lengths = [S] + [int(torch.randint(1, S + 1, (1,), generator=g)) for _ in range(B - 1)]
    mask = torch.arange(S).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    src = src.masked_fill(~mask, 0)
    src[torch.arange(B), torch.tensor(lengths) - 1] = EOS_ID
    return src, mask


def previous_tokens(rows: int, tgt_vocab: int, seed: int = 0) -> Tensor:
    """Previous target words of ``rows`` hypotheses: random words from 2 (``<s>``) up."""
    g = torch.Generator().manual_seed(seed + 1)
    return torch.randint(2, max(tgt_vocab, 3), (rows,), generator=g)
