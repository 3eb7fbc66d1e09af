"""Simple (Elman) recurrent network, the survey's eq. 1 with tanh as the activation.

    h_t = tanh(W x_t + U h_{t-1} + b)

2 matrices and a bias. ``layer_norm=True`` normalises the pre-activation (its offset
replaces b); ``dropout`` drops the new state, which is this unit's candidate.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm
from rnmt.cells.registry import register


@register("srnn")
class SRNN(Cell):
    """Elman RNN, survey eq. 1."""

    gate_names = ()
    input_names = ("W",)
    recurrent_names = ("U",)

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        d = hidden_size
        self.proj_size = d
        self.weight_x = nn.Parameter(torch.empty(input_size, d))
        self.weight_h = nn.Parameter(torch.empty(d, d))
        self.bias = None if layer_norm else nn.Parameter(torch.empty(d))
        self.norm = GateNorm(1, d) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        px = self.input_product(x)
        return px if self.bias is None else px + self.bias  # b added once for all steps

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        pre = self.recurrent_product(state, px)
        if self.norm is not None:
            pre = self.norm(pre)
        new = self.drop_candidate(torch.tanh(pre))
        if return_gates:
            return new, {}
        return new
