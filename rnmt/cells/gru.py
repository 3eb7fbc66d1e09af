"""Gated recurrent unit (Cho et al. 2014) in the DTMT form.

Equations (DTMT eq. 6-9; the ATR paper's eq. 2-5 are the same unit):

    r_t  = sigma(W_r x_t + U_r h_{t-1} + b_r)                     (8)
    z_t  = sigma(W_z x_t + U_z h_{t-1} + b_z)                     (9)
    h~_t = tanh(W_h x_t + r_t * (U_h h_{t-1} + b_h))              (7)
    h_t  = (1 - z_t) * h_{t-1} + z_t * h~_t                       (6)

Conventions:

* The reset gate multiplies the recurrent product ``U_h h`` (DTMT eq. 7, dl4mt, cuDNN),
  not ``h`` before the product (ATR paper eq. 4); this is what lets all three recurrent
  matrices run as one fused product.
* ``z`` weights the NEW candidate (DTMT eq. 6). dl4mt, Nematus and zero write
  ``h' = u*h + (1-u)*h~``: their ``u`` is ``1 - z``, the same unit with a mirrored gate.
* Biases: one 3d vector ``[b_r; b_z; b_h]``. By default it is added to the recurrent
  product, so ``b_h`` sits inside the reset as in DTMT eq. 7 and dl4mt's second conditional
  unit. ``reset_bias=False`` adds it to the input projection instead:
  ``h~ = tanh(W_h x + b_h + r * (U_h h))``, dl4mt's ``gru_layer`` (its encoder and the
  decoder's first unit). r and z are the same either way. Parameters: 3*dx*d + 3*d*d + 3*d.
* ``layer_norm=True`` (DTMT "Layer Normalization"): r, z = sigma(LN(W x + U h)) with one
  LN per gate and no gate biases (the LN offset is the bias); b_h stays. Parameters:
  3*dx*d + 3*d*d + d + 2*(2d). (With layer norm the bias is always the DTMT form.)
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm, interpolate
from rnmt.cells.registry import register


@register("gru")
class GRU(Cell):
    """GRU, DTMT eq. 6-9 (see the module docstring for the conventions)."""

    gate_names = ("r", "z")
    input_names = ("W_r", "W_z", "W_h")
    recurrent_names = ("U_r", "U_z", "U_h")
    bias_names = ("b_r", "b_z", "b_h")

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0,
                 reset_bias: bool = True) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        d = hidden_size
        self.proj_size = 3 * d
        # dl4mt's gru_layer puts b_h outside the reset (module docstring); layer norm keeps DTMT's form.
        self.input_bias = not reset_bias and not layer_norm
        # [W_r W_z W_h] and [U_r U_z U_h], each applied as x @ W.
        self.weight_x = nn.Parameter(torch.empty(input_size, 3 * d))
        self.weight_h = nn.Parameter(torch.empty(d, 3 * d))
        self.bias = nn.Parameter(torch.empty(d if layer_norm else 3 * d))
        self.gate_norm = GateNorm(2, d) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        px = self.input_product(x)
        # The bias in the product's dtype: under bf16 autocast an fp32 bias would promote px.
        return px + self.bias.to(px.dtype) if self.input_bias else px

    def _recurrent_bias(self) -> Optional[Tensor]:
        return None if self.input_bias else self.bias

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        d = self.hidden_size
        # split, not slicing: one backward node per split instead of a zero-filled
        # full-width gradient per slice.
        px_gates, px_h = px.split((2 * d, d), dim=1)
        if self.gate_norm is None:
            rec_gates, rec_h = self.recurrent_product(state, self._recurrent_bias()).split((2 * d, d), dim=1)
            gates = torch.sigmoid(px_gates + rec_gates)
        else:
            rec_gates, rec_h = self.recurrent_product(state).split((2 * d, d), dim=1)
            gates = torch.sigmoid(self.gate_norm(px_gates + rec_gates))
            rec_h = rec_h + self.bias
        r, z = gates.chunk(2, dim=1)
        candidate = self.drop_candidate(torch.tanh(torch.addcmul(px_h, r, rec_h)))
        new = interpolate(state, candidate, z)  # (1 - z) * h + z * h~, eq. 6
        if return_gates:
            return new, {"r": r, "z": z}
        return new
