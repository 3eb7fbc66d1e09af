"""Additive attention scores, e = v^T tanh(K + q), and the per-step operations of the
attention modules.

The attention modules (`AdditiveAttention`, `MultiHeadAdditiveAttention`, `LuongAttention`)
run four operations at every target step, written here as methods of `AttentionSteps` in
plain PyTorch: the query's projection, the scores against the cached keys, the read of the
values, and the preparation of the keys once per batch. `rnmt.fast.attention` replaces them
after a model is built (`rnmt.fast.accelerate`) with the fused score kernel and the
deferred-gradient step products; the arithmetic is the same.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def additive_scores(keys: Tensor, query: Tensor, v: Tensor, heads: int = 1) -> Tensor:
    """keys [B, S, A], query [B * G, A], v [A] -> scores [B * G, S, heads].

    Queries come in groups of G per sentence (G = 1 in training; the beam in search): rows
    b * G .. b * G + G - 1 of ``query`` are scored against sentence b's keys, which are
    therefore never repeated per hypothesis.

    With ``heads`` > 1 the A units are split into equal heads and each head gets its own
    score over its slice (DTMT's multi-head additive attention); v holds all A weights.
    """
    B, S, A = keys.shape
    G = query.size(0) // B
    hidden = torch.tanh(keys.unsqueeze(1) + query.view(B, G, 1, A)).view(B * G, S, A)
    if heads == 1:
        return torch.matmul(hidden, v.unsqueeze(-1))
    return (hidden.view(B * G, S, heads, A // heads) * v.view(heads, A // heads)).sum(-1)


class AttentionSteps:
    """The per-step operations of an attention module (mixed into the module's class)."""

    def step_linear(self, x: Tensor, layer: nn.Module) -> Tensor:
        """``layer(x)`` for one step's queries [B * G, Q]."""
        return layer(x)

    def scores(self, keys: Tensor, query: Tensor, v: Tensor, heads: int = 1) -> Tensor:
        """`additive_scores` of one step's projected queries against the cached keys."""
        return additive_scores(keys, query, v, heads)

    def read(self, weights: Tensor, values: Tensor) -> Tensor:
        """``weights @ values`` ([..., G, S] x [..., S, V]): one step's read of the values."""
        return torch.matmul(weights, values)

    def keys_for_scores(self, keys: Tensor) -> Tensor:
        """The projected keys as `scores` reads them at every step (computed once per batch)."""
        return keys
