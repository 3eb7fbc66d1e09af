"""fp32 matrix products on the CPU through oneDNN instead of PyTorch's BLAS.

PyTorch multiplies fp32 CPU tensors with its BLAS: MKL in the x86 wheels, which on AMD
processors runs its AVX2 code. oneDNN, which PyTorch already carries for its bf16 and int8
products, has AVX-512 fp32 kernels and runs them on any vendor's CPU: on a 2-core Zen 5
EPYC it multiplied rnmt's training shapes 2.2-2.7x faster than MKL (a unit's per-step
product [27 x 512] x [512 x 1536]: 325 against 120 GFLOP/s; the output layer's [972 x 512]
x [512 x 8000]: 492 against 203), in the same IEEE fp32 arithmetic with another summation
order (docs/performance.md, "fp32 products through oneDNN").

Who calls them: the per-step products of a training pass and their deferred gradients
(`rnmt.deferred_grads`, each unit's matrix `Packed` once per pass), the decoders' step
products, and every layer of the models (`Linear`: an ``nn.Linear`` whose forward is the
differentiable `linear`, which `rnmt.fast.accelerate` swaps in for the models'
``nn.Linear``). Each falls back to the PyTorch operation it replaces for anything else
(another dtype or device, CPU autocast on, a compiled step, the C++ kernels unavailable, a
sum longer than the product has outputs: `_long_reduction`) and when oneDNN
is off, so a caller never needs to ask.

Whether oneDNN is on is the process's choice (`active`): the run's execution plan sets it
(`set_choice`, from ``runtime.fp32_products``: `rnmt.plan`); without a plan it follows the
CPU rule of `rnmt.hardware.onednn_fp32_products` (AMD processors with AVX-512), the same on
every start. `speedup` times the two libraries for benchmarks (benchmarks/onednn_products.py);
nothing times them at start. ``with products.use(False): ...`` switches it within a block
(in this thread), for comparisons and tests.
"""

from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, Optional, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd import Function

from rnmt import hardware, kernels

# What benchmarks/onednn_products.py reports against: oneDNN beating the BLAS by this much
# at a unit's product is a gain beyond timing noise. (The choice itself is the CPU rule.)
MIN_SPEEDUP = 1.15
# What torch.profiler calls a product made here (the packed ones are mkldnn::_linear_pointwise).
PROFILE_NAME = "rnmt::onednn_matmul"
_UNDECIDED = object()
_state = threading.local()  # .switch: set by `use` in this thread (None: the process's choice)
_decided: object = _UNDECIDED  # the process's choice once made: True or False
_requested: Optional[bool] = None  # the plan's choice (`set_choice`); None: the CPU rule
_lock = threading.Lock()
K = TypeVar("K")


def best_thread_seconds(candidates: Dict[K, Callable[[], object]], reps: int, rounds: int = 5) -> Dict[K, float]:
    """Each candidate's best time for ``reps`` calls over ``rounds`` alternating rounds, on one
    thread and in this thread's CPU time (wall time on a busy machine measures the
    neighbours), each round after a warm-up call (oneDNN builds its kernel at a shape's first
    call). What `speedup` times its candidates with."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = dict.fromkeys(candidates, float("inf"))
        for _ in range(rounds):
            for name, run in candidates.items():
                run()
                t0 = time.thread_time()
                for _ in range(reps):
                    run()
                best[name] = min(best[name], time.thread_time() - t0)
        return best
    finally:
        torch.set_num_threads(before)


def _available() -> bool:
    """The C++ kernels are built and PyTorch carries oneDNN."""
    return kernels.extension() is not None and torch.backends.mkldnn.is_available()


@functools.cache
def speedup(rows: int = 64, size: int = 512) -> float:
    """BLAS time / oneDNN time of a [rows x size] x [size x 3 size] fp32 product (a unit's
    per-step product) on this CPU, one thread, best of 5 alternating rounds in this thread's
    CPU time (`best_thread_seconds`). 0.0 where the C++ kernels or oneDNN are unavailable."""
    if not _available():
        return 0.0
    ext = kernels.extension()
    # its own generator: the choice is made at the first product, maybe within a seeded
    # run, whose random numbers must not depend on when that is
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(rows, size, generator=generator), torch.randn(size, 3 * size, generator=generator)
    out = torch.empty(rows, 3 * size)
    candidates = {"blas": lambda: torch.mm(a, b), "onednn": lambda: ext.onednn_matmul(out, a, b, 0.0)}
    reps = max(2, int(2e8 / (2 * rows * size * 3 * size)))  # about 0.2 GFLOP a round
    try:
        best = best_thread_seconds(candidates, reps)
    except RuntimeError:  # a build of PyTorch whose oneDNN refuses fp32 products
        return 0.0
    return best["blas"] / max(best["onednn"], 1e-9)


def _decide() -> bool:
    global _decided
    with _lock:
        if _decided is _UNDECIDED:
            wanted = hardware.onednn_fp32_products(hardware.this_cpu())[0] if _requested is None else _requested
            _decided = wanted and _available()
        return bool(_decided)


def set_choice(on: Optional[bool]) -> None:
    """The process's choice (the execution plan's ``fp32_products``): oneDNN (True, where the
    C++ kernels and oneDNN are available) or the BLAS (False); None: back to the CPU rule.
    Settled at the next product, so that setting it builds nothing."""
    global _decided, _requested
    with _lock:
        _requested, _decided = (None if on is None else bool(on)), _UNDECIDED


def active() -> bool:
    """Whether fp32 CPU products go through oneDNN in this thread (see the module docstring)."""
    if kernels.extension() is None:  # switched off (`kernels.use`) or not built
        return False
    switch = getattr(_state, "switch", None)
    if switch is not None:
        return switch
    return bool(_decided) if _decided is not _UNDECIDED else _decide()


def describe() -> str:
    """One line: where this process's fp32 CPU products go."""
    if not _available():
        return "PyTorch's BLAS (no C++ kernels or no oneDNN here)"
    return "oneDNN" if active() else "PyTorch's BLAS"


@contextmanager
def use(on: bool) -> Iterator[None]:
    """Within the block (in this thread) fp32 CPU products go through oneDNN (``on``, where
    the kernels can be built) or through PyTorch's BLAS; the previous choice is restored."""
    before = getattr(_state, "switch", None)
    _state.switch = bool(on)
    try:
        yield
    finally:
        _state.switch = before


def _applies(*tensors: Tensor) -> bool:
    """These operands can go through oneDNN: fp32 CPU tensors that autograd need not follow
    (the kernel has no backward of its own: the callers that train write theirs), outside
    CPU autocast (which would have run the PyTorch operation in bf16), with oneDNN on."""
    if torch.compiler.is_compiling():  # a compiled step (train.compile_step): the compiler's own products
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t.dtype != torch.float32 or t.device.type != "cpu" or (grad and t.requires_grad):
            return False
    return not torch.is_autocast_enabled("cpu") and active()


def _long_reduction(a: Tensor, b: Tensor) -> bool:
    """Whether ``a @ b`` sums over more terms than it has outputs: there oneDNN may split the
    sum between threads, and its result would then depend on the thread count (measured:
    [1 x 3000] x [3000 x 16] and [64 x 20000] x [20000 x 64] did, [512 x 20000] x [20000 x
    1536] and every per-step shape did not, at 1, 2 and 16 threads). PyTorch's BLAS keeps
    those, so that a run gives the same numbers at any thread count where the BLAS does
    (MKL on AMD; on an Intel Xeon MKL splits such sums as well; `rnmt reproduce --jobs` relies
    on rnmt's own shapes, which none of them split)."""
    return a.size(-1) > a.size(-2) * b.size(-1)


def _run(out: Tensor, a: Tensor, b: Tensor, beta: float) -> Tensor:
    if torch.autograd._profiler_enabled():  # a profile names the product (the call is not an aten op)
        with torch.profiler.record_function(PROFILE_NAME):
            kernels.extension().onednn_matmul(out, a, b, beta)  # type: ignore[union-attr]
    else:
        kernels.extension().onednn_matmul(out, a, b, beta)  # type: ignore[union-attr]
    return out


def mm(a: Tensor, b: Tensor) -> Tensor:
    """``torch.mm(a, b)`` ([M, K] x [K, N]) or ``torch.bmm`` ([G, M, K] x [G, K, N])."""
    if not _applies(a, b) or _long_reduction(a, b):
        return torch.mm(a, b) if a.dim() == 2 else torch.bmm(a, b)
    return _run(a.new_empty(*a.shape[:-1], b.size(-1)), a, b, 0.0)


def addmm(base: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``base + a @ b`` into a new tensor (``torch.addmm`` / ``torch.baddbmm``); ``base``
    broadcasts to the product's shape (a bias row, or per-row addends)."""
    if not _applies(base, a, b) or _long_reduction(a, b):
        return torch.addmm(base, a, b) if a.dim() == 2 else torch.baddbmm(base, a, b)
    out = base.expand(*a.shape[:-1], b.size(-1)).clone(memory_format=torch.contiguous_format)
    return _run(out, a, b, 1.0)


def add_product_(out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``out += a @ b`` in place (``addmm_`` / ``baddbmm_`` with beta = 1): a gradient buffer."""
    if not _applies(out, a, b) or not out.is_contiguous() or _long_reduction(a, b):
        return out.addmm_(a, b) if a.dim() == 2 else out.baddbmm_(a, b)
    return _run(out, a, b, 1.0)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``torch.matmul(a, b)`` for the shapes the step functions multiply: 2-D x 2-D, a
    batch [..., M, K] x [..., K, N] of one shape on both sides, or [..., K] rows x [K, N]."""
    if not _applies(a, b) or a.dim() < 2:
        return torch.matmul(a, b)
    if b.dim() == 2 and a.dim() > 2:  # rows of any leading shape through one matrix
        rows = a.reshape(-1, a.size(-1))
        return mm(rows, b).view(*a.shape[:-1], b.size(-1))
    if a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2]:
        return torch.matmul(a, b)
    if a.dim() == 2:
        return mm(a, b)
    lead = a.shape[:-2]
    a3 = a.reshape(-1, *a.shape[-2:])
    b3 = b.reshape(-1, *b.shape[-2:])
    return mm(a3, b3).view(*lead, a.size(-2), b.size(-1))


def _eligible(*tensors: Optional[Tensor]) -> bool:
    """`_applies` without the autograd condition: operands of a differentiable product."""
    if torch.compiler.is_compiling():
        return False
    for t in tensors:
        if t is not None and (t.dtype != torch.float32 or t.device.type != "cpu"):
            return False
    return not torch.is_autocast_enabled("cpu") and active()


class _Product(Function):
    """``x @ w (+ bias)`` over rows of any leading shape, forward and backward through oneDNN;
    ``transposed``: ``weight`` is stored [out, in] (nn.Linear) and applied as ``x @ weight.t()``."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Optional[Tensor], transposed: bool) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.transposed = transposed
        rows = x.reshape(-1, x.size(-1))
        w = weight.t() if transposed else weight
        out = mm(rows, w) if bias is None else addmm(bias, rows, w)
        return out.view(*x.shape[:-1], out.size(-1))

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        g = grad.reshape(-1, grad.size(-1))
        rows = x.reshape(-1, x.size(-1))
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = mm(g, weight if ctx.transposed else weight.t()).view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_w = mm(g.t(), rows) if ctx.transposed else mm(rows.t(), g)
        if ctx.needs_input_grad[2]:
            grad_b = g.sum(0)
        return grad_x, grad_w, grad_b, None


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, transposed: bool = False) -> Tensor:
    """``x @ weight + bias`` (``x @ weight.t()`` when ``transposed``, as ``F.linear``) for rows
    of any leading shape, differentiable; through oneDNN where `_eligible`."""
    if not _eligible(x, weight, bias):
        if transposed:
            return F.linear(x, weight, bias)
        return torch.matmul(x, weight) if bias is None else torch.matmul(x, weight) + bias
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad
                                    or (bias is not None and bias.requires_grad)):
        return _Product.apply(x, weight, bias, transposed)
    rows = x.reshape(-1, x.size(-1))
    w = weight.t() if transposed else weight
    out = mm(rows, w) if bias is None else addmm(bias, rows, w)
    return out.view(*x.shape[:-1], out.size(-1))


class Linear(nn.Linear):
    """``nn.Linear`` whose fp32 CPU products, forward and backward, go through oneDNN
    (`linear`); the same parameters and state-dict keys, anything else as ``nn.Linear``."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias, transposed=True)


def plain_linears(model: nn.Module) -> nn.Module:
    """Turn every `Linear` inside ``model`` into a plain ``nn.Linear`` with the same
    parameters, in place: for code that recognises modules by exact type (PyTorch's dynamic
    int8 quantisation swaps only ``nn.Linear`` itself). The layers' part of
    `rnmt.fast.plain`, which undoes all of `rnmt.fast.accelerate`."""
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if type(child) is Linear:
                plain = nn.Linear(child.in_features, child.out_features, bias=child.bias is not None,
                                  device="meta")
                plain.weight, plain.bias = child.weight, child.bias
                plain.train(child.training)
                setattr(parent, name, plain)
    return model


class Packed:
    """A matrix ``m`` [in, out] (or a group [G, in, out]) copied once into oneDNN's blocked
    layout, for many products ``x @ m``: a unit's weight at every step of a pass. Packing
    once replaces the copy oneDNN otherwise makes of the plain matrix at every product (a
    fresh buffer each time, 3 MiB for a 512-unit GRU's recurrent matrix), which cost time
    and, as the C library's heap fragmented, memory."""

    __slots__ = ("mats", "grouped", "plain")

    def __init__(self, m: Tensor, rows: int) -> None:
        self.plain = m  # for products with too few rows for oneDNN (`_long_reduction`)
        self.grouped = m.dim() == 3
        group = m.unbind(0) if self.grouped else (m,)
        # oneDNN's linear takes the weight as [out, in]; the layout it picks depends little
        # on the row count, which is only a hint (other row counts are multiplied as well)
        self.mats = [torch.ops.mkldnn._reorder_linear_weight(w.t(), max(1, rows)) for w in group]


def pack(m: Tensor, rows: int) -> Optional[Packed]:
    """``m`` packed for `packed_product` where oneDNN multiplies it (`_eligible`), else None."""
    if not _eligible(m):
        return None
    return Packed(m.detach(), rows)


def _packed_2d(x: Tensor, w: Tensor, base: Optional[Tensor]) -> Tensor:
    if base is None:
        return torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")
    if base.dim() == 1:
        return torch.ops.mkldnn._linear_pointwise(x, w, base, "none", [], "")
    return torch.ops.mkldnn._linear_pointwise.binary(x, base.expand(x.size(0), -1).contiguous(), w, None, "add")


def packed_product(x: Tensor, packed: Packed, base: Optional[Tensor] = None) -> Tensor:
    """``x @ m (+ base)`` with a `Packed` m: x [B, in] (or [G, B, in] for a group), base a bias
    vector [out], per-row addends [B, out] (or [G, 1 or B, out]) or None. fp32, no autograd."""
    if _long_reduction(x, packed.plain):
        return mm(x, packed.plain) if base is None else addmm(base, x, packed.plain)
    x = x.contiguous()
    if not packed.grouped:
        return _packed_2d(x, packed.mats[0], base)
    outs = [_packed_2d(x[g], w, None if base is None else base[g]) for g, w in enumerate(packed.mats)]
    return torch.stack(outs)
