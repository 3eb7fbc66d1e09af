"""Addition-subtraction twin-gated recurrent network, ATR (Zhang et al. 2018, eq. 6-9).

    p_t = W_x x_t                    q_t = W_h h_{t-1} + b           (6)
    i_t = sigma(p_t + q_t)                                           (7)
    f_t = sigma(p_t - q_t)                                           (8)
    h_t = i_t * p_t + f_t * h_{t-1}                                  (9)

Two weight matrices; the twin gates share them and differ only by the sign of q_t. The
paper's printed forget gate has a typo that its authors' README corrects; eq. 8 as written
here (p - q) is the released code's. The paper has no bias; the authors' NMT code puts one
on the recurrent product only, which is followed here (parameters dx*d + d*d + d).
``layer_norm=True`` follows that code too: p = LN(W_x x) and q = LN(W_h h) + b, one LN for
each side (p's LN runs over all time steps at once in ``project_inputs``). ``dropout``
drops p in the input term i * p (p plays the candidate's role, the paper's section 3).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm
from rnmt.cells.registry import register


@register("atr")
class ATR(Cell):
    """ATR, eq. 6-9 of the ATR paper."""

    gate_names = ("i", "f")
    input_names = ("W_x",)
    recurrent_names = ("W_h",)

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        d = hidden_size
        self.proj_size = d
        self.weight_x = nn.Parameter(torch.empty(input_size, d))
        self.weight_h = nn.Parameter(torch.empty(d, d))
        self.bias = nn.Parameter(torch.empty(d))
        self.norm_p = GateNorm(1, d) if layer_norm else None
        self.norm_q = GateNorm(1, d) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        p = self.input_product(x)
        return p if self.norm_p is None else self.norm_p(p)

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        if self.norm_q is None:
            q = self.recurrent_product(state, self.bias)
        else:
            q = self.norm_q(self.recurrent_product(state)) + self.bias
        i = torch.sigmoid(px + q)
        f = torch.sigmoid(px - q)
        new = torch.addcmul(f * state, i, self.drop_candidate(px))
        if return_gates:
            return new, {"i": i, "f": f}
        return new
