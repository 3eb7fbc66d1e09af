"""Word embeddings with the papers' options, and the scaled sinusoidal positional encoding.

* ``bias``: THUMT (DTMT) and zero (ATR) add a learned vector b_emb to every lookup
  (SPEC section 0); dl4mt does not.
* ``zero_index``: the row of this token id always looks up the zero vector. The target
  side uses BOS here, which makes E y_0 = 0, the zero first decoder input of dl4mt, THUMT
  and zero. The row is zeroed at lookup time, not only at initialisation, so it stays zero
  even when the matrix is tied to an output layer that trains it.
* `positional_encoding`: Vaswani et al. (2017) sinusoids in the tensor2tensor layout
  (first half sin, second half cos); DTMT adds them scaled by 1/sqrt(E) ("Positional
  Encoding" in its "Advanced Techniques").
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn


class Embedding(nn.Embedding):
    """Lookup table E (``weight`` is [V, E], so it can be tied to an output layer)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, zero_index: Optional[int] = None,
                 bias: bool = False) -> None:
        super().__init__(num_embeddings, embedding_dim, padding_idx=zero_index)
        self.bias = nn.Parameter(torch.zeros(embedding_dim)) if bias else None

    def forward(self, tokens: Tensor) -> Tensor:
        emb = super().forward(tokens)
        if self.bias is not None:
            emb = emb + self.bias
        if self.padding_idx is not None:
            emb = emb.masked_fill((tokens == self.padding_idx).unsqueeze(-1), 0.0)
        return emb


def positional_encoding(positions: Tensor, dim: int, max_timescale: float = 1.0e4) -> Tensor:
    """Sinusoids for integer ``positions`` [...] -> [..., dim] (float32).

    Channel k < dim/2 is sin(pos / T^(k/(dim/2 - 1))), channel dim/2 + k the matching cos,
    with T = ``max_timescale`` (tensor2tensor's ``get_timing_signal_1d``).
    """
    half = dim // 2
    increment = math.log(max_timescale) / max(half - 1, 1)
    inv_timescales = torch.exp(torch.arange(half, device=positions.device, dtype=torch.float32) * -increment)
    scaled = positions.to(torch.float32).unsqueeze(-1) * inv_timescales
    signal = torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=-1)
    if dim % 2:
        signal = torch.nn.functional.pad(signal, (0, 1))
    return signal
