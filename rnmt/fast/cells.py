"""Fast variants of the recurrent units, swapped in by `rnmt.fast.accelerate`.

Each is a subclass of its plain unit (`rnmt.cells`) with the same parameters; it changes
how a step is computed, never what: the plain class's ``step`` stays the reference the
variant falls back to.

* `FastCell`, under every unit: the step products go through `rnmt.deferred_grads` (one
  weight-gradient buffer per training pass) and `rnmt.products` (oneDNN's fp32 products),
  or through int8 twins of the matrices after `rnmt.int8.quantize_for_decoding`; the step
  loop reads the padding mask on the host unless `rnmt.fast.host_reads` forbids it.
* `FastGRU`: DTMT eq. 6-9's element-wise part in one C++ sweep each way on the CPU
  (rnmt/kernels/gru_gates.cpp), PyTorch's fused CUDA cell and cuDNN on a GPU
  (`rnmt.fast.gru_cuda`), the layer-normalised step in one sweep (`rnmt.fast.ln_gates`),
  and both directions of an encoder in one batched product per step (`lockstep`).
* `FastLGRU`, `FastTGRU`: the layer-normalised DTMT units' step in one sweep and their
  lockstep (`rnmt.fast.ln_gates`).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch
from torch import Tensor
from torch.autograd import Function

from rnmt import int8, kernels, precision
from rnmt.cells.base import Cell
from rnmt.cells.dtmt import LGRU, TGRU
from rnmt.cells.gru import GRU
from rnmt.deferred_grads import pair_product, step_product
from rnmt.fast import gru_cuda, host_reads, ln_gates
from rnmt.fast.registry import variant


@variant(Cell)
class FastCell(Cell):
    """Every unit's products through the deferred-gradient step functions (and oneDNN), or
    through int8 twins when quantised for decoding."""

    # Packed int8 twins of weight_h / weight_x for decoding (rnmt/int8.py); None otherwise.
    int8_h: Optional[Any] = None
    int8_x: Optional[Any] = None

    def recurrent_product(self, state: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        if self.int8_h is not None:
            return int8.product(state, self.int8_h, bias)
        return step_product(state, self.weight_h, bias)

    def input_product(self, x: Tensor) -> Tensor:
        if self.int8_x is not None:
            return int8.product(x, self.int8_x)
        return step_product(x, self.weight_x)

    def may_read_host(self) -> bool:
        return host_reads.allowed()


@variant(GRU)
class FastGRU(FastCell, GRU):
    """The GRU's step through the C++ sweep, the CUDA cell or the layer-norm sweep, where
    each applies; otherwise the plain step (which then multiplies through `FastCell`)."""

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        if not return_gates and ln_gates.applies(self, px, state):
            return ln_gates.ln_gates(self, px, self.recurrent_product(state), state)
        if not return_gates and self._fused_applies(px, state):
            # eq. 6-9's element-wise part in one C++ sweep (rnmt/kernels/gru_gates.cpp), and
            # in training one autograd node with a one-sweep backward; in fp32 under bf16
            # autocast too (`rnmt.precision`), reading the bf16 products as they are.
            rec = self.recurrent_product(state, self._recurrent_bias())
            return self._fused_gates(px, rec, precision.fp32(state))
        if not return_gates and gru_cuda.step_applies(self, px, state):
            # on a GPU: PyTorch's fused CUDA cell, one kernel each way (rnmt/fast/gru_cuda.py);
            # after the CPU kernel's test, so a CPU step pays nothing for it
            return gru_cuda.fused_step(self, px, self.recurrent_product(state, self._recurrent_bias()), state)
        return super().step(px, state, return_gates)

    def fused_step_on_cuda(self) -> bool:
        return gru_cuda.fuses(self)

    def pooled_run(self, px: Tensor, mask: Tensor, state: Tensor, mode: str) -> Optional[Tensor]:
        if gru_cuda.source_applies(self, px):  # on a GPU: one cuDNN call instead of n steps
            return gru_cuda.run_over_source(self, px, mask, state, mode)
        return None

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
        if not (type(other) is FastGRU and self.int8_h is None and other.int8_h is None  # int8: unit by unit
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


@variant(LGRU)
class FastLGRU(FastCell, LGRU):
    """The layer-normalised L-GRU's step (DTMT eq. 14-16) in one C++ sweep each way."""

    def lockstep(self, other: Cell, like: Tensor):
        return ln_gates.lockstep(self, other, like, linear=True)

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        if not return_gates and ln_gates.applies(self, px, state):
            return ln_gates.ln_gates(self, px, self.recurrent_product(state), state, linear=True)
        return super().step(px, state, return_gates)


@variant(TGRU)
class FastTGRU(FastCell, TGRU):
    """The layer-normalised T-GRU's step (DTMT eq. 10-13) in one C++ sweep each way."""

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        if not return_gates and ln_gates.applies(self, None, state):
            return ln_gates.ln_gates(self, None, self.recurrent_product(state), state)
        return super().step(px, state, return_gates)

    def lockstep(self, other: Cell, like: Tensor):
        return ln_gates.lockstep(self, other, like, reads_input=False)
