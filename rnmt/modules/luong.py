"""Luong et al. (2015) attention: global (dot, general, concat) and local-p (survey section 2.5).

Scores of the current decoder state h_t against the source states h_s:

    dot      h_t^T h_s
    general  h_t^T W_a h_s                 (W_a h_s precomputed once per sentence)
    concat   v_a^T tanh(W_a [h_t; h_s])    (the h_s half precomputed)

Global attention normalises the scores over the whole sentence. Local-p predicts an
aligned position p_t = S_x * sigmoid(v_p^T tanh(W_p h_t)) (S_x the sentence length), keeps
the window [p_t - D, p_t + D], normalises the "general" scores inside it and multiplies
them by exp(-(s - p_t)^2 / (2 sigma^2)) with sigma = D / 2 (the weights are not
renormalised afterwards, as in the paper).
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor, nn

from rnmt.modules.attention import NEG_INF
from rnmt.modules.scores import AttentionSteps

SCORES = ("dot", "general", "concat", "local-p")


class LuongAttention(AttentionSteps, nn.Module):
    def __init__(self, score: str, query_size: int, key_size: int, window: int = 10) -> None:
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"Luong attention score must be one of {', '.join(SCORES)}, got {score!r}")
        if score == "dot" and query_size != key_size:
            raise ValueError("dot attention needs decoder and encoder states of the same size")
        self.score = score
        self.window = window
        self.key_proj = None
        if score in ("general", "local-p"):
            self.key_proj = nn.Linear(key_size, query_size, bias=False)  # W_a
        elif score == "concat":
            self.key_proj = nn.Linear(key_size, query_size, bias=False)  # W_a, h_s half
            self.query_proj = nn.Linear(query_size, query_size, bias=False)  # W_a, h_t half
            self.v = nn.Linear(query_size, 1, bias=False)  # v_a
        if score == "local-p":
            self.position_proj = nn.Linear(query_size, query_size, bias=False)  # W_p
            self.position_v = nn.Linear(query_size, 1, bias=False)  # v_p

    def precompute(self, memory: Tensor) -> Tensor:
        if self.key_proj is None:
            return memory
        keys = self.key_proj(memory)
        return self.keys_for_scores(keys) if self.score == "concat" else keys

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
        """query h_t [B * G, Q], keys [B, S, Q], values h_s [B, S, D], mask [B, S] -> (c_t [B * G, D],
        a_t [B * G, S]); G queries per sentence (the beam in search) share its keys and values."""
        B, S = mask.shape
        G = query.size(0) // B
        if self.score == "concat":
            scores = self.scores(keys, self.step_linear(query, self.query_proj), self.v.weight.view(-1)).view(B, G, S)
        else:
            scores = torch.bmm(query.view(B, G, -1), keys.transpose(1, 2))  # [B, G, S]
        if self.score != "local-p":
            weights = torch.softmax(scores.masked_fill(~mask.unsqueeze(1), NEG_INF), dim=-1)
        else:
            scores, mask = scores.view(B * G, S), mask.repeat_interleave(G, 0)
            length = mask.sum(1, keepdim=True).to(query.dtype)
            p = length * torch.sigmoid(self.position_v(torch.tanh(self.position_proj(query))))  # p_t [B * G, 1]
            positions = torch.arange(S, device=keys.device, dtype=query.dtype).unsqueeze(0)
            inside = mask & ((positions - p).abs() <= self.window)
            # p_t can land past the last token; keep the nearest one so the window is never empty.
            nearest = (positions - p.clamp(max=length - 1)).abs().argmin(1, keepdim=True)
            # (a comparison, not ``scatter`` of a scalar: TorchScript, which `rnmt export` traces with, has no
            # alias rule for that form)
            inside = inside | (torch.arange(S, device=keys.device).unsqueeze(0) == nearest)
            weights = torch.softmax(scores.masked_fill(~inside, NEG_INF), dim=-1)
            sigma = self.window / 2.0
            weights = (weights * torch.exp(-((positions - p) ** 2) / (2 * sigma**2))).view(B, G, S)
        context = self.read(weights, values)  # [B, G, D]
        return context.view(B * G, -1), weights.view(B * G, S)
