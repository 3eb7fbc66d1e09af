"""One weight-gradient accumulation per weight and training pass, instead of one per time step.

A recurrent step multiplies the previous state by the same matrix at every step, so plain
autograd computes that matrix's gradient as T separate products ``h_t^T g_t`` (a thin
[d x B] x [B x k*d] product, which two threads run at about 75% of the GEMM peak here), each
written to a fresh buffer and then added to ``.grad`` by its own ``add_``. Inside a
`deferred_weight_grads` scope the step product is a custom autograd function instead: its
backward returns only the gradient of the state and accumulates ``h_t^T g_t`` in place
(``addmm_``, beta = 1) into one buffer per weight; a single node that every step depends on
hands the finished buffer to autograd once, after the last step's backward. Same sums, one
buffer, no per-step allocation or addition. ``python benchmarks/weight_grads.py`` measures it.

Models open the scope around ``forward`` in training mode (`TranslationModel` registers
the hooks); decoding and evaluation never enter it. Autocast (bf16) keeps plain autograd.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Tuple

import torch
from torch import Tensor
from torch.autograd import Function

_local = threading.local()
enabled = True  # models open scopes (off: plain autograd everywhere, for comparisons)


class _Collector:
    """The gradient of one (weight, bias) pair, summed over the steps of one pass."""

    __slots__ = ("params", "token", "grad_weight", "grad_bias")

    def __init__(self, weight: Tensor, bias: Optional[Tensor]) -> None:
        self.params = (weight, bias)  # kept alive: the scope's keys are their ids
        self.token: Optional[Tensor] = None
        self.grad_weight: Optional[Tensor] = None
        self.grad_bias: Optional[Tensor] = None


class _Gather(Function):
    """Hands the summed gradients to the weight (and bias) once: every step product takes
    this node's empty output as an input, so autograd runs this backward after all of them."""

    @staticmethod
    def forward(ctx, weight: Tensor, bias: Optional[Tensor], collector: _Collector) -> Tensor:
        ctx.collector = collector
        return weight.new_empty(0)

    @staticmethod
    def backward(ctx, _unused: Tensor):
        c = ctx.collector
        grad_weight, grad_bias = c.grad_weight, c.grad_bias
        c.grad_weight = c.grad_bias = None  # a second backward (retain_graph) starts afresh
        return grad_weight, grad_bias, None


class _StepProduct(Function):
    """``x @ weight + addend (+ bias)`` whose weight and bias gradients go to a collector;
    ``transposed``: the weight is stored [out, in] (nn.Linear) and applied as ``x @ weight.t()``."""

    @staticmethod
    def forward(ctx, x: Tensor, token: Tensor, addend: Optional[Tensor], weight: Tensor, bias: Optional[Tensor],
                collector: _Collector, transposed: bool) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.collector, ctx.has_bias, ctx.transposed = collector, bias is not None, transposed
        w = weight.t() if transposed else weight
        base = addend if addend is not None else bias  # never both (see _Scope.product)
        return torch.mm(x, w) if base is None else torch.addmm(base, x, w)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        c = ctx.collector
        a, b = (grad.t(), x) if ctx.transposed else (x.t(), grad)
        if c.grad_weight is None:
            c.grad_weight = torch.mm(a, b)
        else:
            c.grad_weight.addmm_(a, b)
        if ctx.has_bias:
            rows = grad.sum(0)
            c.grad_bias = rows if c.grad_bias is None else c.grad_bias.add_(rows)
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.mm(grad, weight if ctx.transposed else weight.t())
        grad_addend = grad if ctx.needs_input_grad[2] else None
        return grad_x, grad.new_empty(0), grad_addend, None, None, None, None


class _Scope:
    def __init__(self) -> None:
        self.collectors: Dict[Tuple[int, int], _Collector] = {}

    def product(self, x: Tensor, weight: Tensor, addend: Optional[Tensor], bias: Optional[Tensor],
                transposed: bool) -> Tensor:
        key = (id(weight), id(bias))
        c = self.collectors.get(key)
        if c is None:
            c = self.collectors[key] = _Collector(weight, bias)
            c.token = _Gather.apply(weight, bias, c)
        return _StepProduct.apply(x, c.token, addend, weight.detach(), None if bias is None else bias.detach(), c,
                                  transposed)


def _open_scope() -> Optional[_Scope]:
    return getattr(_local, "scope", None)


@contextmanager
def deferred_weight_grads(enabled: bool = True) -> Iterator[None]:
    """Within this block, `step_product` defers weight gradients (see the module docstring).
    Nested blocks share the outer scope."""
    if not enabled or _open_scope() is not None:
        yield
        return
    _local.scope = _Scope()
    try:
        yield
    finally:
        _local.scope = None


def step_product(x: Tensor, weight: Tensor, addend: Optional[Tensor] = None, transposed: bool = False) -> Tensor:
    """``x @ weight + addend`` for one time step (``x @ weight.t()`` when ``transposed``).
    ``addend`` is a per-row tensor [B, N] or a bias vector [N]; a parameter vector's
    gradient is deferred along with the weight's. Any other x than [B, in] is multiplied
    as usual."""
    scope = _open_scope()
    if scope is None or x.dim() != 2 or not (weight.requires_grad and weight.is_leaf):
        w = weight.t() if transposed else weight
        if addend is None:
            return torch.matmul(x, w)
        return torch.addmm(addend, x, w) if x.dim() == 2 else torch.matmul(x, w) + addend
    if addend is not None and addend.dim() == 1 and addend.requires_grad and addend.is_leaf:
        return scope.product(x, weight, None, addend, transposed)
    return scope.product(x, weight, addend, None, transposed)


def linear_step(x: Tensor, layer: torch.nn.Linear) -> Tensor:
    """``layer(x)`` for one time step, through `step_product`."""
    return step_product(x, layer.weight, layer.bias, transposed=True)


# --------------------------------------------------------------- hooks for TranslationModel
def _wants_scope(module: torch.nn.Module, args) -> bool:
    if not (enabled and module.training and torch.is_grad_enabled()):
        return False
    device = next((a.device.type for a in args if isinstance(a, Tensor)), "cpu")
    return not torch.is_autocast_enabled(device)


def open_for_training(module: torch.nn.Module, args) -> None:
    """Forward pre-hook: open a scope for this training forward pass (unless one is open)."""
    if _open_scope() is None and _wants_scope(module, args):
        _local.scope = _Scope()
        _local.owner = module


def close_after_forward(module: torch.nn.Module, args, output) -> None:
    """Forward hook (also run when forward raises): close the scope this module opened."""
    if getattr(_local, "owner", None) is module:
        _local.scope = None
        _local.owner = None
