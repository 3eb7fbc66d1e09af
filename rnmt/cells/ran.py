"""Recurrent additive network, RAN (Lee et al. 2017), as compared in the ATR paper.

    c~_t = W_cx x_t
    i_t  = sigma(W_ih h_{t-1} + W_ix x_t + b_i)
    f_t  = sigma(W_fh h_{t-1} + W_fx x_t + b_f)
    c_t  = i_t * c~_t + f_t * c_{t-1}
    h_t  = g(c_t),   g = identity (default) or tanh (option ``activation``)

3 input matrices, 2 recurrent matrices and 2 biases (the ATR paper's Table 4 count). The
carried state is c; ``output(state)`` and the next step's recurrent input are g(c).
``layer_norm=True`` normalises i's and f's pre-activations (their offsets replace b_i, b_f);
``dropout`` drops the content c~.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm
from rnmt.cells.registry import register
from rnmt.errors import UserError

ACTIVATIONS = ("identity", "tanh")


@register("ran")
class RAN(Cell):
    """RAN (Lee et al. 2017); state = c, output = g(c)."""

    gate_names = ("i", "f")
    input_names = ("W_cx", "W_ix", "W_fx")
    recurrent_names = ("W_ih", "W_fh")
    bias_names = ("b_i", "b_f")

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        layer_norm: bool = False,
        dropout: float = 0.0,
        activation: str = "identity",
    ) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        if activation not in ACTIVATIONS:
            raise UserError(f"cell 'ran': option 'activation' must be one of {', '.join(ACTIVATIONS)}, "
                            f"got {activation!r}")
        d = hidden_size
        self.activation = activation
        self.proj_size = 3 * d
        # Column blocks: [W_cx W_ix W_fx] and [W_ih W_fh].
        self.weight_x = nn.Parameter(torch.empty(input_size, 3 * d))
        self.weight_h = nn.Parameter(torch.empty(d, 2 * d))
        self.bias = None if layer_norm else nn.Parameter(torch.empty(2 * d))
        self.gate_norm = GateNorm(2, d) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        px = self.input_product(x)
        # b_i, b_f added once for all steps (c~ has no bias).
        return px if self.bias is None else px + F.pad(self.bias, (self.hidden_size, 0))

    def output(self, state: Tensor) -> Tensor:
        return torch.tanh(state) if self.activation == "tanh" else state

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        d = self.hidden_size
        content, px_gates = px.split((d, 2 * d), dim=1)
        pre = self.recurrent_product(self.output(state), px_gates)
        if self.gate_norm is not None:
            pre = self.gate_norm(pre)
        i, f = torch.sigmoid(pre).chunk(2, dim=1)
        new = torch.addcmul(f * state, i, self.drop_candidate(content))
        if return_gates:
            return new, {"i": i, "f": f}
        return new

    def extra_repr(self) -> str:
        return super().extra_repr() + f", activation={self.activation}"
