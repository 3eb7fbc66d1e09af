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

from typing import Callable, Optional

import torch
from torch import Tensor, nn
from torch.autograd import Function

from rnmt import kernels, precision
from rnmt.cells import gru_cuda, ln_gates
from rnmt.cells.base import Cell, GateNorm, interpolate
from rnmt.cells.registry import register
from rnmt.deferred_grads import pair_product


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
        if not return_gates and ln_gates.applies(self, px, state):
            return ln_gates.ln_gates(self, px, self.recurrent_product(state), state)
        if not return_gates and self._fused_applies(px, state):
            # eq. 6-9's element-wise part in one C++ sweep (rnmt/kernels/gru_gates.cpp), and
            # in training one autograd node with a one-sweep backward; in fp32 under bf16
            # autocast too (`rnmt.precision`), reading the bf16 products as they are.
            rec = self.recurrent_product(state, self._recurrent_bias())
            return self._fused_gates(px, rec, precision.fp32(state))
        if not return_gates and gru_cuda.step_applies(self, px, state):
            # on a GPU: PyTorch's fused CUDA cell, one kernel each way (rnmt/cells/gru_cuda.py);
            # after the CPU kernel's test, so a CPU step pays nothing for it
            return gru_cuda.fused_step(self, px, self.recurrent_product(state, self._recurrent_bias()), state)
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

    def fused_step_on_cuda(self) -> bool:
        return gru_cuda.fuses(self)

    def _fused_applies(self, px: Tensor, state: Tensor) -> bool:
        """No layer norm, float32 on the CPU (or bf16 under CPU autocast), dense rows,
        kernels built (with or without autograd)."""
        return (self._kernel_applies(px) and precision.kernel_dtype_ok(state)
                and px.stride(-1) == 1 and state.stride(-1) == 1)

    def _kernel_applies(self, like: Tensor) -> bool:
        return (self.gate_norm is None and self.weight_h.dtype == torch.float32 and precision.kernel_dtype_ok(like)
                and like.device.type == "cpu" and kernels.extension() is not None)

    def _fused_gates(self, px: Tensor, rec: Tensor, state: Tensor) -> Tensor:
        """h' from [N, 3d] rows of projected input and recurrent product (with b) and h [N, d]."""
        mask = None
        if self.dropout > 0.0 and self.training:  # the candidate's dropout, as drop_candidate
            keep = 1.0 - self.dropout
            mask = torch.empty_like(state).bernoulli_(keep).div_(keep)
        if torch.is_grad_enabled() and (px.requires_grad or rec.requires_grad or state.requires_grad):
            return _FusedGates.apply(px, rec, state, mask)
        return kernels.extension().gru_gates_inference(px, rec, state, mask)

    def lockstep(self, other: Cell, like: Tensor) -> Optional[Callable[[Tensor, Tensor], Tensor]]:
        """Two GRUs of the same size (the directions of a bidirectional encoder) stepping
        together: their U matrices stacked once per call into one [2, d, 3d] batched product
        per step, and eq. 6-9's element-wise part for both in one fused sweep. Two threads run
        the batched product of two [B x d] x [d x 3d] products faster than the two products
        one after the other (docs/performance.md). With layer norm: `ln_gates.lockstep`."""
        if self.gate_norm is not None:
            return ln_gates.lockstep(self, other, like)
        if not (type(other) is GRU and self.int8_h is None and other.int8_h is None  # int8: unit by unit
                and other.hidden_size == self.hidden_size and other.dropout == self.dropout
                and other.input_bias == self.input_bias and other.training == self.training
                and self._kernel_applies(like) and other._kernel_applies(like)):
            return None
        d = self.hidden_size
        weight = torch.stack([self.weight_h, other.weight_h])  # [2, d, 3d]
        bias = None if self.input_bias else torch.stack([self.bias, other.bias]).unsqueeze(1)  # [2, 1, 3d]

        def step(px: Tensor, state: Tensor) -> Tensor:
            rec = pair_product(state, weight, bias)
            new = self._fused_gates(px.reshape(-1, 3 * d), rec.reshape(-1, 3 * d), precision.fp32(state.reshape(-1, d)))
            return new.view(state.shape)

        return step


class _FusedGates(Function):
    """Eq. 6-9's element-wise part as one autograd node: ``h'`` from the projected input
    ``px``, the recurrent product ``rec`` (with b) and ``h``; the backward returns the
    gradients of all three in one sweep (``mask``: the candidate's scaled dropout mask)."""

    @staticmethod
    def forward(ctx, px: Tensor, rec: Tensor, state: Tensor, mask):
        new, saved = kernels.extension().gru_gates_forward(px, rec, state, mask)
        ctx.save_for_backward(state, saved, mask)
        return new

    @staticmethod
    def backward(ctx, grad: Tensor):
        state, saved, mask = ctx.saved_tensors
        grad_px, grad_rec, grad_state = kernels.extension().gru_gates_backward(grad, state, saved, mask)
        return grad_px, grad_rec, grad_state, None
