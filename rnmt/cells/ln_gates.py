"""The layer-normalised gated units' element-wise step as one C++ sweep each way.

GRU, T-GRU and L-GRU with ``layer_norm=True`` (DTMT eq. 6-16 with the "Layer
Normalization" section's per-gate LN) share one step shape: LN'd sigmoid gates from the
projected input plus the recurrent product, a reset-gated tanh candidate (plus L-GRU's
gated linear term), dropout on the candidate and the update-gate interpolation.
`rnmt/kernels/ln_gates.cpp` computes it forward and backward in one sweep each, with the
dropout mask hashed from a seed drawn from PyTorch's generator (so runs stay
reproducible from ``torch.manual_seed``) instead of a ``bernoulli_`` tensor. The units
keep their PyTorch expression for gates requested by analysis, other dtypes and devices,
autocast, and when the kernels are unavailable; tests compare the two.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch.autograd import Function

from rnmt import kernels

_SEED_RANGE = 2**31 - 1


def applies(cell, px: Optional[Tensor], state: Tensor) -> bool:
    """The unit has layer norm, the tensors are float32 with dense rows on the CPU, no
    autocast, and the kernels are built."""
    return (cell.gate_norm is not None and state.dtype == cell.weight_h.dtype == torch.float32
            and state.device.type == "cpu" and state.stride(-1) == 1 and not torch.is_autocast_enabled("cpu")
            and (px is None or (px.dtype == torch.float32 and px.stride(-1) == 1))
            and kernels.extension() is not None)


def ln_gates(cell, px: Optional[Tensor], rec: Tensor, state: Tensor, linear: bool = False) -> Tensor:
    """h' of ``cell`` (GRU / T-GRU / L-GRU with layer norm) from its projected input ``px``
    (None for the T-GRU), its recurrent product without bias ``rec`` and the state."""
    keep = 1.0 - cell.dropout if cell.training else 1.0
    seed = int(torch.randint(_SEED_RANGE, (1,))) if keep < 1.0 else 0
    norm = cell.gate_norm
    args = (px, rec, state, norm.gain, norm.offset, cell.bias, norm.num_gates, linear, keep, seed)
    needs_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args[:6])
    if needs_grad:
        return _LNGates.apply(*args)
    return kernels.extension().ln_gates_forward(*args)[0]


class _LNGates(Function):
    @staticmethod
    def forward(ctx, px, rec, state, gain, offset, bias_h, gates, linear, keep, seed):
        new, saved, rstd = kernels.extension().ln_gates_forward(px, rec, state, gain, offset, bias_h, gates, linear,
                                                                keep, seed)
        ctx.save_for_backward(px, state, saved, rstd, gain)
        ctx.meta = (gates, linear, keep, seed)
        return new

    @staticmethod
    def backward(ctx, grad: Tensor):
        px, state, saved, rstd, gain = ctx.saved_tensors
        gates, linear, keep, seed = ctx.meta
        grad_px, grad_rec, grad_state, grad_gain, grad_offset = kernels.extension().ln_gates_backward(
            grad, px, state, saved, rstd, gain, gates, linear, keep, seed)
        d = state.size(1)
        return (grad_px if px is not None else None, grad_rec, grad_state, grad_gain.sum(0), grad_offset.sum(0),
                grad_rec[:, gates * d:].sum(0), None, None, None, None)
