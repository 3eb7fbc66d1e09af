"""Attention over source annotations.

Every attention module splits its work like the recurrent units do: ``precompute(memory)``
projects the source annotations once per sentence (cached in the model's memory dict and
reused by every decoding step and every beam), and ``forward(query, keys, values, mask)``
scores one query per sentence against them.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor, nn

from rnmt.modules.scores import AttentionSteps

NEG_INF = -1e9  # added to the scores of padded positions (SPEC section 0)


class AdditiveAttention(AttentionSteps, nn.Module):
    """Bahdanau et al. (2015) additive attention as in dl4mt (Cseq2seq paper eq. 4-5):

        e_ji = U_att^T tanh(W_c_att h_i + b_att + W_comb_att s~_j) + c_tt
        alpha_j = softmax(e_j),   c_j = sum_i alpha_ji h_i

    ``key_size`` is the annotation size (2d for a bidirectional encoder); the hidden size of
    the scoring network equals the annotation size, as in dl4mt (SPEC A1).
    """

    def __init__(self, query_size: int, key_size: int, attn_size: int | None = None,
                 score_bias: bool = True) -> None:
        super().__init__()
        attn_size = attn_size or key_size
        self.key_proj = nn.Linear(key_size, attn_size, bias=True)  # W_c_att, b_att
        self.query_proj = nn.Linear(query_size, attn_size, bias=False)  # W_comb_att
        self.score = nn.Linear(attn_size, 1, bias=score_bias)  # U_att, c_tt

    def precompute(self, memory: Tensor) -> Tensor:
        """Project all annotations once: [B, S, key_size] -> [B, S, attn_size]."""
        return self.keys_for_scores(self.key_proj(memory))

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
        """query [B * G, Q], keys [B, S, A] (precomputed), values [B, S, V], mask [B, S]
        -> (context [B * G, V], weights [B * G, S]).

        G queries per sentence (G = 1 in training, the beam in beam search) share that
        sentence's keys and values, so beam search never copies the source memory.
        """
        B, S = mask.shape
        G = query.size(0) // B
        scores = self.scores(keys, self.step_linear(query, self.query_proj), self.score.weight.view(-1)).view(B, G, S)
        if self.score.bias is not None:
            scores = scores + self.score.bias
        scores = scores.masked_fill(~mask.unsqueeze(1), NEG_INF)
        weights = torch.softmax(scores, dim=-1)
        context = self.read(weights, values)  # [B, G, V]: one product per sentence for all its queries
        return context.view(B * G, -1), weights.view(B * G, S)
