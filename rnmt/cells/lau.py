"""Linear associative unit, LAU (Wang et al. 2017), the DTMT paper's comparison unit.

    r_t  = sigma(W_xr x_t + W_hr h_{t-1} + b_r)
    z_t  = sigma(W_xz x_t + W_hz h_{t-1} + b_z)
    g_t  = sigma(W_xg x_t + W_hg h_{t-1} + b_g)
    h~_t = tanh(W_xh x_t + r_t * (W_hh h_{t-1} + b_h))
    h_t  = ((1 - z_t) * h_{t-1} + z_t * h~_t) * (1 - g_t) + g_t * H(x_t),   H(x_t) = W_x x_t

9 matrices (5 on x, 4 on h). Biases as in the GRU plus one for g: ``[b_r; b_z; b_g; b_h]``
added to the recurrent product, with b_h inside the reset; H(x) has none. The update gate
follows the GRU convention of this package (z weights the candidate). ``layer_norm=True``
normalises r, z and g (one LN each, no gate biases); ``dropout`` drops h~.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm, interpolate
from rnmt.cells.registry import register


class _ThreeGateLinearCell(Cell):
    """Parameter layout shared by LAU and L-GRU: three gates, a candidate and a linear
    input term H(x) = W_x x, i.e. 5 input-side and 4 recurrent-side matrices."""

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        d = hidden_size
        self.proj_size = 5 * d
        self.weight_x = nn.Parameter(torch.empty(input_size, 5 * d))
        self.weight_h = nn.Parameter(torch.empty(d, 4 * d))
        self.bias = nn.Parameter(torch.empty(d if layer_norm else 4 * d))
        self.gate_norm = GateNorm(3, d) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        return self.input_product(x)

    def _parts(self, px: Tensor, state: Tensor):
        """The three gates, tanh(W_xh x + r * (W_hh h + b_h)) and H(x)."""
        d = self.hidden_size
        px_gates, px_h, linear = px.split((3 * d, d, d), dim=1)
        if self.gate_norm is None:
            rec_gates, rec_h = self.recurrent_product(state, self.bias).split((3 * d, d), dim=1)
            gates = torch.sigmoid(px_gates + rec_gates)
        else:
            rec_gates, rec_h = self.recurrent_product(state).split((3 * d, d), dim=1)
            gates = torch.sigmoid(self.gate_norm(px_gates + rec_gates))
            rec_h = rec_h + self.bias
        r, z, third = gates.chunk(3, dim=1)
        nonlinear = torch.tanh(torch.addcmul(px_h, r, rec_h))
        return r, z, third, nonlinear, linear


@register("lau")
class LAU(_ThreeGateLinearCell):
    """LAU (Wang et al. 2017): GRU output interpolated with a linear input term by g."""

    gate_names = ("r", "z", "g")
    input_names = ("W_xr", "W_xz", "W_xg", "W_xh", "W_x")
    recurrent_names = ("W_hr", "W_hz", "W_hg", "W_hh")
    bias_names = ("b_r", "b_z", "b_g", "b_h")

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        r, z, g, candidate, linear = self._parts(px, state)
        gru_out = interpolate(state, self.drop_candidate(candidate), z)
        new = interpolate(gru_out, linear, g)  # gru_out * (1 - g) + g * H(x)
        if return_gates:
            return new, {"r": r, "z": z, "g": g}
        return new
