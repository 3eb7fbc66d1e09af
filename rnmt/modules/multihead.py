"""Multi-head additive attention (DTMT section "DTMT", c_t = Multihead-Attention(C, s_t,Lq);
SPEC B1 from the authors' code).

    K = C W_k,  q = s W_q                    both split into h heads of A/h units
    e_{t,k,i} = v^T tanh(q_k + K_{k,i})      one v shared by all heads (or one per head)
    alpha_{t,k} = softmax_i(e_{t,k})
    c_t = [sum_i alpha_{t,1,i} C_{1,i}; ...; sum_i alpha_{t,h,i} C_{h,i}]

The values are the raw annotations C split into h heads, so c_t has the annotations' size
(2d for a bidirectional encoder). ``output_size`` adds the code's projection c_t W_o + b_o
(the paper's equations have none). Scores are not scaled. K is computed once per sentence
by ``precompute``; the returned weights are averaged over heads for analysis.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor, nn

from rnmt.modules.attention import NEG_INF
from rnmt.modules.scores import AttentionSteps


class MultiHeadAdditiveAttention(AttentionSteps, nn.Module):
    def __init__(self, query_size: int, key_size: int, attn_size: int, heads: int,
                 per_head_v: bool = False, output_size: int | None = None) -> None:
        super().__init__()
        if attn_size % heads or key_size % heads:
            raise ValueError(f"{heads} heads must divide the attention size {attn_size} and the "
                             f"annotation size {key_size}")
        self.heads = heads
        self.key_proj = nn.Linear(key_size, attn_size, bias=False)  # W_k
        self.query_proj = nn.Linear(query_size, attn_size, bias=False)  # W_q
        self.v = nn.Parameter(torch.empty(heads if per_head_v else 1, attn_size // heads))
        nn.init.uniform_(self.v, -0.1, 0.1)
        self.output_proj = nn.Linear(key_size, output_size) if output_size else None  # W_o, b_o
        self.output_size = output_size or key_size

    def precompute(self, memory: Tensor) -> Tensor:
        return self.keys_for_scores(self.key_proj(memory))

    def head_major(self, values: Tensor) -> Tensor:
        """[B, S, D] -> [B, h, S, D/h], contiguous: the layout the per-head context product
        reads without a copy at every step (a model keeps it in its memory, once per batch)."""
        B, S, D = values.shape
        return values.view(B, S, self.heads, D // self.heads).transpose(1, 2).contiguous()

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
        """query [B * G, Q], keys [B, S, A], values [B, S, D] (or `head_major` [B, h, S, D/h]),
        mask [B, S] -> (c [B * G, out], weights [B * G, S]); G queries per sentence share its
        keys and values (the beam in search)."""
        B, S, _ = keys.shape
        G = query.size(0) // B
        h = self.heads
        v = self.v.expand(h, -1).reshape(-1)  # one v per head, or the shared one repeated
        scores = self.scores(keys, self.step_linear(query, self.query_proj), v, heads=h).view(B, G, S, h)
        scores = scores.masked_fill(~mask.view(B, 1, S, 1), NEG_INF)
        weights = torch.softmax(scores, dim=2)
        if values.dim() == 4:  # head-major: one [G x S] x [S x D/h] product per sentence and head
            context = self.read(weights.permute(0, 3, 1, 2), values).transpose(1, 2).reshape(B * G, -1)
        else:
            context = torch.einsum("bgsh,bshd->bghd", weights, values.view(B, S, h, -1)).reshape(B * G, -1)
        if self.output_proj is not None:
            context = self.output_proj(context)
        return context, weights.mean(-1).view(B * G, S)
