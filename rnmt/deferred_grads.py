"""One weight-gradient accumulation per weight and training pass, instead of one per time step.

A recurrent step multiplies the previous state by the same matrix at every step, so plain
autograd computes that matrix's gradient as T separate products ``h_t^T g_t`` (a thin
[d x B] x [B x k*d] product, which two threads run at about 75% of the GEMM peak here), each
written to a fresh buffer and then added to ``.grad`` by its own ``add_``. Inside a
`deferred_weight_grads` scope the step product is a custom autograd function instead: its
backward returns only the gradient of the state and accumulates ``h_t^T g_t`` in place
(``addmm_``, beta = 1) into one buffer per weight; a single node that every step depends on
hands the finished buffer to autograd once, after the last step's backward. Same sums, one
buffer, no per-step allocation or addition. ``python -m benchmarks.weight_grads`` measures it.

Tensors that every target step reads (the attention's annotations and keys) use the same
scope: `step_bmm` collects each step's attention weights and output gradient and computes
the annotations' gradient as one batched product at the end, and the attention kernel adds
each step's key gradient in place to the keys' collector (`memory_collector`).

Models open the scope around ``forward`` in training mode (`rnmt.fast.accelerate` registers
the hooks on every `TranslationModel`); decoding and evaluation never enter it. Under CPU bf16 autocast
(`rnmt.precision`) the scope casts each weight (and each every-step tensor) to bf16 once per
pass, the step products run in bf16, and every weight's gradient is a bf16 product over
the stacked per-step operands (accumulated in fp32 inside the GEMM, rounded once, added to
an fp32 buffer), made at the end of the pass or each time the operands reach
`FLUSH_BYTES`: CPU torch has no bf16 x bf16 -> fp32 ``addmm_``, and a running bf16 sum over
the steps would round at every step. fp32 passes whose products go through oneDNN
(`rnmt.products`) stack their operands the same way: there one product over all steps ran
1.13-1.30x faster end to end than a per-step ``addmm_`` into the buffer, which reads and
writes the whole [in x out] buffer at every step (docs/performance.md, "fp32 products
through oneDNN"); with the BLAS the per-step ``addmm_`` stays. On a GPU the models keep
plain autograd, in fp32 and under autocast: there the time goes to launching kernels and
the scope's Python-level step functions cost more than they save (`_wants_scope`).

The switch: ``with deferred_grads.enabled(False): ...`` makes the models' training passes
use plain autograd within the block (benchmarks and tests compare the two); the default is
on. It is process-wide, as the training loop is one thread. Explicit scopes
(`deferred_weight_grads`) do not consult it.

Why the scope state is thread-local and keyed by ``id()``: a scope belongs to one forward
pass, and a server decodes in other threads while nothing there may see a training scope;
and tensors cannot be dictionary keys (``==`` compares element-wise), so collectors are
keyed by the ids of the weight and bias, which the collector keeps alive for the scope's
lifetime, so an id cannot be reused by another tensor while it is a key.

The fast variants of the units, the attention modules and the score kernel (`rnmt.fast`)
use it; the plain model code does not (docs/architecture.md).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Tuple

import torch
from torch import Tensor
from torch.autograd import Function

from rnmt import precision, products

_local = threading.local()  # .scope: the open _Scope of this thread, or None
# Bytes of step operands a collector gathers before it multiplies them (`Collector.append`):
# the backward pass has just written them, so the concatenation and the product read them
# from the cache (L3), and they are freed as it goes. The cyclic models' re-reading units
# gather about 900 steps a pass (about 90 MB in bf16), which one product at the end read
# back from memory; a pass's other collectors stay under the bound and keep one product.
FLUSH_BYTES = 16 << 20
_models_defer = True  # see `enabled`


@contextmanager
def enabled(on: bool) -> Iterator[None]:
    """Within the block, the models' training passes defer weight gradients (``on``, the
    default outside any block) or use plain autograd (``on=False``). Restored on exit."""
    global _models_defer
    before, _models_defer = _models_defer, bool(on)
    try:
        yield
    finally:
        _models_defer = before


def is_enabled() -> bool:
    """Whether the models' training passes defer weight gradients (see `enabled`)."""
    return _models_defer


class Collector:
    """The gradient of one tensor (and optionally a bias), summed over the steps of one pass.

    Step functions add to ``grad`` (and ``grad_bias``) in place, or append ``(a, g)`` pairs
    to ``parts`` for a batched product ``a^T g`` that is computed once at the end.
    """

    __slots__ = ("params", "token", "grad", "grad_bias", "parts", "part_bytes", "low", "packs")

    def __init__(self, tensor: Tensor, bias: Optional[Tensor]) -> None:
        self.params: Optional[tuple] = (tensor, bias)  # kept alive while the scope's keys are their ids
        self.token: Optional[Tensor] = None
        self.grad: Optional[Tensor] = None
        self.grad_bias: Optional[Tensor] = None
        self.parts: List[Tuple[Tensor, Tensor]] = []
        self.part_bytes = 0
        self.low: Optional[Tensor] = None  # the tensor in bf16, cast once per pass under CPU autocast
        # oneDNN's packed copies of the product's matrix ("forward") and its transpose
        # ("backward"), made at their first step of the pass (`packed`)
        self.packs: Dict[str, Optional[products.Packed]] = {}

    def lowered(self, tensor: Tensor) -> Tensor:
        """``tensor`` (detached) in bf16, cast at the first call of the pass."""
        if self.low is None:
            self.low = tensor.detach().to(torch.bfloat16)
        return self.low

    def packed(self, direction: str, matrix: Tensor) -> Optional[products.Packed]:
        """``matrix`` packed for oneDNN, once per pass and direction (None where oneDNN does
        not multiply it: `products.pack`)."""
        if direction not in self.packs:
            self.packs[direction] = products.pack(matrix, rows=32)
        return self.packs[direction]

    def add(self, grad: Tensor) -> None:
        self.grad = grad if self.grad is None else self.grad.add_(grad)

    def append(self, a: Tensor, g: Tensor) -> None:
        """One step's operands of ``a^T g``; each `FLUSH_BYTES` of them become one product."""
        self.parts.append((a, g))
        self.part_bytes += a.numel() * a.element_size() + g.numel() * g.element_size()
        if self.part_bytes >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        # [..., n_t, S] and [..., n_t, V] per step -> one [..., S, sum n] x [..., sum n, V]
        a = torch.cat([a for a, _ in self.parts], -2)
        g = torch.cat([g for _, g in self.parts], -2)
        self.parts, self.part_bytes = [], 0
        self.add(products.matmul(a.transpose(-1, -2), g).float())  # bf16 parts: rounded once per product

    def finish(self) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        if self.parts:
            self._flush()
        grad, grad_bias = self.grad, self.grad_bias
        self.grad = self.grad_bias = self.low = None  # a second backward (retain_graph) starts afresh
        self.packs = {}
        return grad, grad_bias


class _Gather(Function):
    """Hands the summed gradients to the weight (and bias) once: every step product takes
    this node's empty output as an input, so autograd runs this backward after all of them."""

    @staticmethod
    def forward(ctx, tensor: Tensor, bias: Optional[Tensor], collector: Collector) -> Tensor:
        ctx.collector = collector
        return tensor.new_empty(0)

    @staticmethod
    def backward(ctx, _unused: Tensor):
        return (*ctx.collector.finish(), None)


class _StepProduct(Function):
    """``x @ weight + addend (+ bias)`` whose weight and bias gradients go to a collector;
    ``transposed``: the weight is stored [out, in] (nn.Linear) and applied as ``x @ weight.t()``.
    A bf16 ``weight`` (the pass's cast, CPU autocast) makes a bf16 product, whose weight
    gradient waits in the collector's ``parts`` for a product over many steps (`Collector.append`)."""

    @staticmethod
    def forward(ctx, x: Tensor, token: Tensor, addend: Optional[Tensor], weight: Tensor, bias: Optional[Tensor],
                collector: Collector, transposed: bool) -> Tensor:
        base = addend if addend is not None else bias  # never both (see _Scope.product)
        if x.dtype != weight.dtype:  # fp32 states into the bf16 pass's product
            x = x.to(weight.dtype)
        if base is not None and base.dtype != weight.dtype:
            base = base.to(weight.dtype)
        ctx.save_for_backward(x, weight)
        ctx.collector, ctx.has_bias, ctx.transposed = collector, bias is not None, transposed
        w = weight.transpose(-1, -2) if transposed else weight
        packed = collector.packed("forward", w)
        if packed is not None:
            return products.packed_product(x, packed, base)
        # x [B, in], or [G, B, in] x [G, in, out] for G units stepping together (`pair_product`)
        return products.mm(x, w) if base is None else products.addmm(base, x, w)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        c = ctx.collector
        batched = x.dim() == 3
        if weight.dtype != torch.float32 or products.active():  # a bf16 pass, or oneDNN's fp32 products
            c.append(*((grad, x) if ctx.transposed else (x, grad)))
        else:
            a, b = (grad.transpose(-1, -2), x) if ctx.transposed else (x.transpose(-1, -2), grad)
            c.grad = products.mm(a, b) if c.grad is None else products.add_product_(c.grad, a, b)
        if ctx.has_bias:
            rows = grad.sum(-2, keepdim=batched, dtype=torch.float32)
            c.grad_bias = rows if c.grad_bias is None else c.grad_bias.add_(rows)
        grad_x = None
        if ctx.needs_input_grad[0]:
            w_t = weight if ctx.transposed else weight.transpose(-1, -2)
            packed = c.packed("backward", w_t)
            grad_x = products.packed_product(grad, packed) if packed is not None else products.matmul(grad, w_t)
        grad_addend = grad if ctx.needs_input_grad[2] else None
        return grad_x, grad.new_empty(0), grad_addend, None, None, None, None


class _Scope:
    def __init__(self, owner: object) -> None:
        self.owner = owner  # the module whose forward hook opened it (None: `deferred_weight_grads`)
        self.collectors: Dict[Tuple[int, int], Collector] = {}

    def collector(self, tensor: Tensor, bias: Optional[Tensor] = None) -> Collector:
        key = (id(tensor), id(bias))
        c = self.collectors.get(key)
        if c is None:
            c = self.collectors[key] = Collector(tensor, bias)
            c.token = _Gather.apply(tensor, bias, c)
        return c

    def close(self) -> None:
        """Drop the scope's references: the token's node holds its collector, so a collector
        that kept the token (or the tensors) would form a cycle that keeps every pass's
        graph and memory alive until the garbage collector finds it."""
        for c in self.collectors.values():
            c.token = None
            c.params = None
        self.collectors.clear()

    def product(self, x: Tensor, weight: Tensor, addend: Optional[Tensor], bias: Optional[Tensor],
                transposed: bool) -> Tensor:
        c = self.collector(weight, bias)
        w = c.lowered(weight) if precision.cpu_autocast() else weight.detach()
        return _StepProduct.apply(x, c.token, addend, w, None if bias is None else bias.detach(), c, transposed)


def _open_scope() -> Optional[_Scope]:
    return getattr(_local, "scope", None)


def _begin(owner: object) -> None:
    _local.scope = _Scope(owner)


def _end() -> None:
    _local.scope.close()
    _local.scope = None


@contextmanager
def deferred_weight_grads(enabled: bool = True) -> Iterator[None]:
    """Within this block, `step_product` defers weight gradients (see the module docstring).
    Nested blocks share the outer scope."""
    if not enabled or _open_scope() is not None:
        yield
        return
    _begin(None)
    try:
        yield
    finally:
        _end()


def step_product(x: Tensor, weight: Tensor, addend: Optional[Tensor] = None, transposed: bool = False) -> Tensor:
    """``x @ weight + addend`` for one time step (``x @ weight.t()`` when ``transposed``).
    ``addend`` is a per-row tensor [B, N] or a bias vector [N]; a parameter vector's
    gradient is deferred along with the weight's. Any other x than [B, in] is multiplied
    as usual."""
    scope = _open_scope()
    if scope is None or x.dim() != 2 or not (weight.requires_grad and weight.is_leaf):
        if addend is None:
            return products.linear(x, weight, transposed=transposed)
        if x.dim() == 2:
            return products.addmm(addend, x, weight.t() if transposed else weight)
        return products.linear(x, weight, transposed=transposed) + addend
    if addend is not None and addend.dim() == 1 and addend.requires_grad and addend.is_leaf:
        return scope.product(x, weight, None, addend, transposed)
    return scope.product(x, weight, addend, None, transposed)


def pair_product(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``x @ weight + bias`` for G units stepping together: x [G, B, in], weight [G, in, out]
    (the units' matrices stacked once per pass), bias [G, 1, out] or None; one batched
    product. In a scope the stacked weight and bias get one gradient buffer each, as
    `step_product` gives a single unit's."""
    scope = _open_scope()
    if scope is None or not weight.requires_grad:
        return products.mm(x, weight) if bias is None else products.addmm(bias, x, weight)
    if bias is not None and not bias.requires_grad:
        return scope.product(x, weight, bias.expand(x.size(0), x.size(1), -1), None, False)
    return scope.product(x, weight, None, bias, False)


def linear_step(x: Tensor, layer: torch.nn.Module) -> Tensor:
    """``layer(x)`` for one time step, through `step_product`; a layer that is not a float
    ``nn.Linear`` (an int8 one, `rnmt.int8`) is simply called."""
    if not isinstance(layer, torch.nn.Linear):
        return layer(x)
    return step_product(x, layer.weight, layer.bias, transposed=True)


class _StepBmm(Function):
    """``weights @ values`` ([..., G, S] x [..., S, V], batch dimensions first) whose gradient
    for ``values`` is one batched product over all steps of the pass (`Collector.finish`),
    not a thin [S x G] x [G x V] product and a full-size addition per step. In fp32 under
    CPU autocast too: a bf16 product would copy ``values`` (a bf16 cast, then a reorder) at
    every step for a product of a few MFLOP."""

    @staticmethod
    def forward(ctx, weights: Tensor, token: Tensor, values: Tensor, collector: Collector) -> Tensor:
        weights, values = weights.float(), values.float()  # no-ops outside autocast
        ctx.save_for_backward(weights, values)
        ctx.collector = collector
        with torch.autocast(values.device.type, enabled=False):
            return torch.matmul(weights, values)

    @staticmethod
    def backward(ctx, grad: Tensor):
        weights, values = ctx.saved_tensors
        ctx.collector.append(weights, grad)
        grad_weights = torch.matmul(grad, values.transpose(-1, -2)) if ctx.needs_input_grad[0] else None
        return grad_weights, grad.new_empty(0), None, None


def step_bmm(weights: Tensor, values: Tensor) -> Tensor:
    """``torch.matmul(weights, values)`` ([..., G, S] x [..., S, V], the same batch dimensions)
    for one step's read of a tensor every step reads (the attention's annotations)."""
    c = memory_collector(values)
    if c is None:
        return torch.matmul(weights, values)
    return _StepBmm.apply(weights, c.token, values.detach(), c)


def memory_collector(tensor: Tensor) -> Optional[Collector]:
    """The open scope's collector for a tensor that every step reads (None outside a scope
    or for a tensor without gradient). Step functions take its ``token`` as an input and
    add their gradient for the tensor to it instead of returning one."""
    scope = _open_scope()
    if scope is None or not tensor.requires_grad:
        return None
    return scope.collector(tensor)


# --------------------------------------------------------------- hooks for TranslationModel
def _wants_scope(module: torch.nn.Module, args) -> bool:
    if not (_models_defer and module.training and torch.is_grad_enabled()):
        return False
    device = next((a.device.type for a in args if isinstance(a, Tensor)), "cpu")
    if device != "cpu":
        # On a GPU the scope's per-step autograd Functions cost more host time than the
        # per-step products they save: RNNSearch-GRU trained at 20,321 target tok/s without
        # it and 15,974 with it on an H100 (results/gpu/*-deferred-*.json, cee549a+).
        return False
    return not torch.is_autocast_enabled(device) or precision.cpu_autocast()


def open_for_training(module: torch.nn.Module, args) -> None:
    """Forward pre-hook: open a scope for this training forward pass (unless one is open)."""
    if _open_scope() is None and _wants_scope(module, args):
        _begin(module)


def close_after_forward(module: torch.nn.Module, args, output) -> None:
    """Forward hook (also run when forward raises): close the scope this module opened."""
    scope = _open_scope()
    if scope is not None and scope.owner is module:
        _end()
