"""Long short-term memory (Hochreiter & Schmidhuber 1997), as in the survey's section 2.3.

    i_t  = sigma(W_i x_t + U_i h_{t-1} + b_i)
    f_t  = sigma(W_f x_t + U_f h_{t-1} + b_f)
    o_t  = sigma(W_o x_t + U_o h_{t-1} + b_o)
    c~_t = tanh(W_c x_t + U_c h_{t-1} + b_c)
    c_t  = f_t * c_{t-1} + i_t * c~_t
    h_t  = o_t * tanh(c_t)

8 matrices and one 4d bias (the survey writes no biases; every NMT toolkit has them).
The carried state is ``[h; c]`` (state_size = 2 * hidden_size); ``output(state)`` is h.
``layer_norm=True`` normalises the three gates' pre-activations (one LN each, no gate
biases); the candidate keeps its bias b_c, as the GRU's candidate does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm
from rnmt.cells.registry import register


@register("lstm")
class LSTM(Cell):
    """LSTM, survey section 2.3; state = [h; c]."""

    gate_names = ("i", "f", "o")
    input_names = ("W_i", "W_f", "W_o", "W_c")
    recurrent_names = ("U_i", "U_f", "U_o", "U_c")
    bias_names = ("b_i", "b_f", "b_o", "b_c")

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        d = hidden_size
        self.state_size = 2 * d
        self.proj_size = 4 * d
        # Column blocks: [i f o c].
        self.weight_x = nn.Parameter(torch.empty(input_size, 4 * d))
        self.weight_h = nn.Parameter(torch.empty(d, 4 * d))
        self.bias = nn.Parameter(torch.empty(d if layer_norm else 4 * d))
        self.gate_norm = GateNorm(3, d) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        # The biases are added here once for all steps (with layer_norm only b_c remains).
        bias = self.bias if self.gate_norm is None else F.pad(self.bias, (3 * self.hidden_size, 0))
        return self.input_product(x) + bias

    def output(self, state: Tensor) -> Tensor:
        return state[..., : self.hidden_size]

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        d = self.hidden_size
        h, c = state.chunk(2, dim=1)
        gates_pre, cand_pre = self.recurrent_product(h, px).split((3 * d, d), dim=1)
        gates = torch.sigmoid(gates_pre if self.gate_norm is None else self.gate_norm(gates_pre))
        i, f, o = gates.chunk(3, dim=1)
        candidate = self.drop_candidate(torch.tanh(cand_pre))
        c_new = torch.addcmul(f * c, i, candidate)
        h_new = o * torch.tanh(c_new)
        new = torch.cat([h_new, c_new], dim=1)
        if return_gates:
            return new, {"i": i, "f": f, "o": o}
        return new
