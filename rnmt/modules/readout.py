"""The deep output layer of RNNSearch-style decoders (Cseq2seq eq. 2, g(E y_{j-1}, s_j, c_j)).

``tanh`` (dl4mt, SPEC B4):

    t_j = tanh(W_1 s_j + b_1 + W_2 E y_{j-1} + b_2 + W_3 c_j + b_3)       [E]
    logits_j = W_o t_j + b_o

``maxout`` (Bahdanau et al. 2015, appendix A.2.2): the same three projections, to 2l units,
then a maximum over pairs, t_j = max(t~_{j,2k-1}, t~_{j,2k}), to l units.

The three projections keep dl4mt's separate layers (ff_logit_lstm, ff_logit_prev,
ff_logit_ctx) each with its own bias, which the parameter counts of the papers' tables
include. Dropout is applied to t_j before the output layer.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class DeepOutput(nn.Module):
    def __init__(self, state_size: int, emb_size: int, ctx_size: int, vocab_size: int,
                 kind: str = "tanh", hidden_size: int | None = None, dropout: float = 0.0,
                 output_bias: bool = True) -> None:
        super().__init__()
        if kind not in ("tanh", "maxout"):
            raise ValueError(f"readout must be 'tanh' or 'maxout', got {kind!r}")
        self.kind = kind
        hidden = hidden_size or emb_size
        width = 2 * hidden if kind == "maxout" else hidden
        self.from_state = nn.Linear(state_size, width)  # W_1, b_1
        self.from_prev = nn.Linear(emb_size, width)  # W_2, b_2
        self.from_ctx = nn.Linear(ctx_size, width) if ctx_size else None  # W_3, b_3
        self.output = nn.Linear(hidden, vocab_size, bias=output_bias)  # W_o, b_o
        self.dropout = nn.Dropout(dropout)

    def forward(self, state: Tensor, prev_emb: Tensor, context: Tensor | None) -> Tensor:
        """Logits from s_j, E y_{j-1} and c_j (any leading dims)."""
        t = self.from_state(state) + self.from_prev(prev_emb)
        if self.from_ctx is not None:
            t = t + self.from_ctx(context)
        if self.kind == "tanh":
            t = torch.tanh(t)
        else:
            t = t.unflatten(-1, (-1, 2)).amax(-1)
        return self.output(self.dropout(t))
