"""Additive attention scores, e = v^T tanh(K + q), through the fused C++ kernel.

``additive_scores`` runs the kernel of ``rnmt.kernels`` for float32 tensors on the CPU (one
sweep over the keys per step, nothing of size [B, S, A] saved for backward), in fp32 under
CPU bf16 autocast too (`rnmt.precision`), and the PyTorch expression of
`rnmt.modules.scores` everywhere else (CUDA, no compiler). The attention modules reach it
through `rnmt.fast.attention` once `rnmt.fast.accelerate` has swapped their step operations.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from rnmt import kernels, precision
from rnmt.deferred_grads import memory_collector
from rnmt.modules import scores as plain


class _FusedAdditiveScores(torch.autograd.Function):
    """The kernel as an autograd function. In a training pass (`rnmt.deferred_grads`)
    ``collector`` is the keys' collector and ``token`` its input: the key gradient of every
    step is then added in place to one buffer per pass instead of being returned per step."""

    @staticmethod
    def forward(ctx, keys: Tensor, query: Tensor, v: Tensor, heads: int, token=None, collector=None) -> Tensor:
        ext = kernels.extension()
        ctx.save_for_backward(keys, query, v)  # keys are the model's cached projection: no copy
        ctx.heads, ctx.collector = heads, collector
        return ext.scores_forward(keys, query, v, heads)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        keys, query, v = ctx.saved_tensors
        c = ctx.collector
        ext = kernels.extension()
        grad_keys, grad_query, grad_v = ext.scores_backward(grad.contiguous(), keys, query, v, ctx.heads,
                                                            None if c is None else c.grad)
        if c is None:
            return grad_keys, grad_query, grad_v, None, None, None
        c.grad = grad_keys
        return None, grad_query, grad_v, None, grad.new_empty(0), None


def _kernel_applies(*tensors: Tensor) -> bool:
    return (all(t.device.type == "cpu" and precision.kernel_dtype_ok(t) for t in tensors)
            and kernels.extension() is not None)


def additive_scores(keys: Tensor, query: Tensor, v: Tensor, heads: int = 1) -> Tensor:
    """`rnmt.modules.scores.additive_scores` (shapes and grouping as there) through the fused
    C++ kernel where it applies, else the plain expression."""
    if _kernel_applies(keys, query, v):
        # fp32 math under bf16 autocast too; `keys_for_scores` made the keys fp32 once per batch
        keys, query, v = (precision.fp32(t).contiguous() for t in (keys, query, v))
        c = memory_collector(keys)
        if c is None:
            return _FusedAdditiveScores.apply(keys, query, v, heads)
        return _FusedAdditiveScores.apply(keys.detach(), query, v, heads, c.token, c)
    return plain.additive_scores(keys, query, v, heads)


def keys_for_scores(keys: Tensor) -> Tensor:
    """Precomputed keys as `additive_scores` reads them: under CPU bf16 autocast the kernel
    computes in fp32, so the bf16 key projection is cast once per batch, not once per step."""
    if keys.device.type == "cpu" and precision.cpu_autocast() and kernels.extension() is not None:
        return precision.fp32(keys)
    return keys
