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

from typing import Callable, Optional, Tuple

import torch
from torch import Tensor
from torch.autograd import Function

from rnmt import kernels, precision
from rnmt.deferred_grads import pair_product

_SEED_RANGE = 2**31 - 1


def applies(cell, px: Optional[Tensor], state: Tensor) -> bool:
    """The unit has layer norm, the tensors are float32 (or bf16 under CPU autocast, read
    widened by the sweeps: `rnmt.precision`) with dense rows on the CPU, and the kernels
    are built."""
    return (cell.gate_norm is not None and cell.weight_h.dtype == torch.float32 and precision.kernel_dtype_ok(state)
            and state.device.type == "cpu" and state.stride(-1) == 1
            and (px is None or (precision.kernel_dtype_ok(px) and px.stride(-1) == 1))
            and kernels.extension() is not None)


def ln_gates(cell, px: Optional[Tensor], rec: Tensor, state: Tensor, linear: bool = False,
             params: Optional[Tuple[Tensor, Tensor, Tensor]] = None) -> Tensor:
    """h' of ``cell`` (GRU / T-GRU / L-GRU with layer norm) from its projected input ``px``
    (None for the T-GRU), its recurrent product without bias ``rec`` and the state.
    ``params``: (gain, offset, b_h) stacked [G, .] for G units of the cell's kind stepping
    together on G equal blocks of rows (`lockstep`); the cell's own otherwise."""
    # px and rec may stay bf16 (under CPU autocast): the sweeps read them widened
    state = precision.fp32(state)
    keep = 1.0 - cell.dropout if cell.training else 1.0
    seed = int(torch.randint(_SEED_RANGE, (1,))) if keep < 1.0 else 0
    norm = cell.gate_norm
    gain, offset, bias = params if params is not None else (norm.gain, norm.offset, cell.bias)
    group_rows = state.size(0) // bias.size(0) if params is not None else 0
    args = (px, rec, state, gain, offset, bias, norm.num_gates, linear, keep, seed, group_rows)
    needs_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args[:6])
    if needs_grad:
        return _LNGates.apply(*args)
    return kernels.extension().ln_gates_forward(*args)[0]


def lockstep(first, second, like: Tensor, linear: bool = False,
             reads_input: bool = True) -> Optional[Callable[[Optional[Tensor], Tensor], Tensor]]:
    """`Cell.lockstep` of the layer-normalised units: a step of ``first`` and ``second`` (same
    kind, sizes, dropout and mode) on stacked inputs (px [2, B, P], ignored when the units
    read no input, state [2, B, d]), their recurrent matrices and LN parameters stacked once,
    one batched product and one sweep per step; None where the units differ, multiply in int8
    (`rnmt.int8`: they step one by one) or the kernel does not apply to tensors like ``like``."""
    if not (type(first) is type(second) and first.int8_h is None and second.int8_h is None  # int8: unit by unit
            and first.hidden_size == second.hidden_size
            and first.input_size == second.input_size and first.dropout == second.dropout
            and first.training == second.training and second.gate_norm is not None
            and applies(first, None, like)):
        return None
    weight = torch.stack([first.weight_h, second.weight_h])
    params = tuple(torch.stack(pair) for pair in ((first.gate_norm.gain, second.gate_norm.gain),
                                                   (first.gate_norm.offset, second.gate_norm.offset),
                                                   (first.bias, second.bias)))

    def step(px: Optional[Tensor], state: Tensor) -> Tensor:
        rows = state.size(0) * state.size(1)
        rec = pair_product(state, weight)
        flat_px = px.reshape(rows, -1) if reads_input else None
        new = ln_gates(first, flat_px, rec.reshape(rows, -1), state.reshape(rows, -1), linear, params)
        return new.view(state.shape)

    return step


class _LNGates(Function):
    @staticmethod
    def forward(ctx, px, rec, state, gain, offset, bias_h, gates, linear, keep, seed, group_rows):
        new, saved, rstd = kernels.extension().ln_gates_forward(px, rec, state, gain, offset, bias_h, gates, linear,
                                                                keep, seed, group_rows)
        ctx.save_for_backward(px, state, saved, rstd, gain)
        ctx.meta = (gates, linear, keep, seed, group_rows)
        return new

    @staticmethod
    def backward(ctx, grad: Tensor):
        px, state, saved, rstd, gain = ctx.saved_tensors
        gates, linear, keep, seed, group_rows = ctx.meta
        grad_px, grad_rec, grad_state, grad_gain, grad_offset = kernels.extension().ln_gates_backward(
            grad, px, state, saved, rstd, gain, gates, linear, keep, seed, group_rows)
        d = state.size(1)
        grad_bias = grad_rec[:, gates * d:]
        if group_rows:  # per-unit sums over each unit's block of rows
            groups = state.size(0) // group_rows
            sums = [g.reshape(groups, group_rows, -1).sum(1) for g in (grad_gain, grad_offset, grad_bias)]
        else:
            sums = [g.sum(0) for g in (grad_gain, grad_offset, grad_bias)]
        return (grad_px if px is not None else None, grad_rec, grad_state, *sums, None, None, None, None, None)
