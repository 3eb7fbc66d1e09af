"""Where CPU bf16 autocast meets rnmt's fp32 kernels.

Under ``torch.autocast("cpu", dtype=torch.bfloat16)`` (``train.amp: bf16``) every matrix
product runs in bf16 and returns bf16. rnmt's fused element-wise kernels (GRU gates,
layer-normalised gates, additive attention scores; `rnmt.kernels`) compute in fp32 and
return fp32: the gate sweeps read their bf16 products directly, widening each row exactly
(`rnmt/kernels/bf16_rows.h`), and the attention scores take theirs cast up (one element-wise
copy, far cheaper than the dozen bf16 element-wise kernels of the PyTorch expression they
replace).
The next product casts its operand down again. So gates, states, layer-norm statistics,
attention scores and the loss keep fp32 arithmetic while the products run at the bf16
rate (docs/performance.md, "bf16 training").
"""

from __future__ import annotations

import functools
from typing import Optional, Tuple

import torch
from torch import Tensor

from rnmt import products


def cpu_autocast() -> bool:
    """bf16 autocast is on for the CPU."""
    return torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16


# False leaves the element-wise work under autocast to the PyTorch expressions, as before
# the kernels took bf16 inputs: benchmarks/amp_products.py times the two against each other.
fused_under_autocast = True


def kernel_dtype_ok(tensor: Tensor) -> bool:
    """``tensor`` can feed an fp32 CPU kernel: fp32, or bf16 under CPU bf16 autocast (then
    cast up by `fp32`)."""
    if torch.is_autocast_enabled("cpu"):
        return fused_under_autocast and cpu_autocast() and tensor.dtype in (torch.float32, torch.bfloat16)
    return tensor.dtype == torch.float32


def fp32(tensor: Tensor) -> Tensor:
    """``tensor`` in fp32 (itself when it already is; differentiable)."""
    return tensor if tensor.dtype == torch.float32 else tensor.float()


# `train.amp: auto` on the CPU: bf16 when this processor's bf16 products are this much faster
# than fp32 ones. Below it the casts and the step's fp32 parts eat the gain: the RNNSearch-GRU
# step ran 1.7x fp32 where products ran 2.1-2.7x, and 0.58x where they ran 0.5-0.8x
# (docs/performance.md, "bf16 training").
BF16_MIN_SPEEDUP = 1.5
# Models narrower than this train in fp32 under auto: their products are too small to gain.
BF16_MIN_HIDDEN = 128
# On a GPU `auto` picks bf16 from this hidden size: measured on an H100, fp32 trained 15-32%
# faster at 512 units (RNNSearch-GRU, DTMT#1, DTMT#4, Cseq2seq-I; ATR the exception), bf16 as
# fast or faster at the papers' 1,000-1,024 (docs/performance.md, "Which precision on a GPU").
GPU_BF16_MIN_HIDDEN = 1000


@functools.cache
def cpu_bf16_speedup(hidden: int) -> float:
    """fp32 time / bf16 time of a [256 x hidden] x [hidden x 3 hidden] product (a unit's input
    projection) on this CPU, the fp32 one as rnmt multiplies (`rnmt.products`: oneDNN where
    it beats the BLAS): best of 5 alternating rounds, about a tenth of a second. 0.0 where
    oneDNN has no bf16 products for this CPU.

    On one thread, timed in that thread's CPU time: the ratio is a property of the core's
    instructions, and on a busy machine a multi-threaded product waits for its slowest
    thread, so wall time moved it anywhere: on a 2-core Zen 5 beside two training runs the
    same product at 2 threads in wall time gave 1.44x once (under `BF16_MIN_SPEEDUP`) and
    up to 9.08x, at one thread in CPU time 4.25-4.43x (``benchmarks/amp_probe.py``,
    docs/performance.md "bf16 training")."""
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return 0.0
    a32 = torch.randn(256, hidden)
    b32 = torch.randn(hidden, 3 * hidden)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    reps = max(2, int(1e9 / (2 * 256 * hidden * 3 * hidden)))  # about 1 GFLOP a round
    best = products.best_thread_seconds({torch.float32: lambda: products.mm(a32, b32),
                                         torch.bfloat16: lambda: products.mm(a16, b16)}, reps)
    return best[torch.float32] / max(best[torch.bfloat16], 1e-9)


def cpu_auto_dtype(hidden: int) -> Tuple[Optional[torch.dtype], str]:
    """What ``train.amp: auto`` trains in on this CPU, and why (one line for the log)."""
    if hidden < BF16_MIN_HIDDEN:
        return None, f"fp32 (hidden size {hidden} < {BF16_MIN_HIDDEN}: too small for bf16 to pay)"
    speedup = cpu_bf16_speedup(hidden)
    shape = f"256 x {hidden} x {3 * hidden}"
    if speedup >= BF16_MIN_SPEEDUP:
        return torch.bfloat16, f"bf16 (this CPU's bf16 products run {speedup:.2f}x fp32's at {shape})"
    if speedup == 0.0:
        return None, "fp32 (no bf16 products on this CPU)"
    return None, (f"fp32 (this CPU's bf16 products run {speedup:.2f}x fp32's at {shape}, "
                  f"under the {BF16_MIN_SPEEDUP}x that bf16 training needs to pay)")
