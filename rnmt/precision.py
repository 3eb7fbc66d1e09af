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

import time
from typing import Optional, Tuple

import torch
from torch import Tensor

from rnmt import hardware, products


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


# What benchmarks/amp_probe.py compares `batch_speedup` with: below this the casts and the
# step's fp32 parts eat bf16's gain (the RNNSearch-GRU step ran 1.7x fp32 where products ran
# 2.1-2.7x, and 0.58x where they ran 0.5-0.8x; docs/performance.md, "bf16 training"). The
# choice of `train.amp: auto` is the CPU rule of `rnmt.hardware.bf16_training`, not a timing.
BF16_MIN_SPEEDUP = 1.5
BF16_MIN_HIDDEN = hardware.BF16_MIN_HIDDEN
# On a GPU `auto` picks bf16 from this hidden size: measured on an H100, fp32 trained 15-32%
# faster at 512 units (RNNSearch-GRU, DTMT#1, DTMT#4, Cseq2seq-I; ATR the exception), bf16 as
# fast or faster at the papers' 1,000-1,024 (docs/performance.md, "Which precision on a GPU").
GPU_BF16_MIN_HIDDEN = 1000


# The probe's simulated batch: this many time steps, at row counts (one per round) that the
# process's other products are unlikely to have met, so each round's products are new shapes.
PROBE_STEPS = 16
PROBE_ROWS = (53, 59, 67, 71, 79)


def batch_speedup(hidden: int, rows: Tuple[int, ...] = PROBE_ROWS) -> float:
    """A measurement for benchmarks/amp_probe.py (nothing calls it at start: `train.amp: auto`
    follows `rnmt.hardware.bf16_training`).

    fp32 time / bf16 time of a simulated batch's products at a unit of ``hidden`` units on
    this CPU: the input projections of `PROBE_STEPS` steps as one [steps x r, hidden] x
    [hidden, 3 hidden] product, then the steps' own [r, hidden] x [hidden, 3 hidden] products,
    at a row count r not met before (one per round, ``rows``); the fp32 ones as rnmt
    multiplies (`rnmt.products`: oneDNN where it beats the BLAS). Best of the rounds, fp32 and
    bf16 alternating. 0.0 where oneDNN has no bf16 products for this CPU.

    New shapes because training meets them: token batches change shape at every update, and
    oneDNN builds a kernel for each new bf16 product shape, which on a CPU with AMX costs
    milliseconds (docs/performance.md, "An Intel Xeon with AMX"). A ratio of one repeated
    product, as this probe was up to 97a4af7 (3.65x at 256 units on an AMX Xeon), hid that: the
    quickstart's 256-unit RNNSearch then trained in bf16 at 0.73-0.92x fp32's speed; this
    probe gives 0.73-1.03x there and 1.61-1.87x at 512 units, where bf16 trains 1.17-1.32x faster.

    On one thread, timed in that thread's CPU time: the ratio is a property of the core's
    instructions, and on a busy machine a multi-threaded product waits for its slowest
    thread, so wall time moved it anywhere: on a 2-core Zen 5 beside two training runs a
    product at 2 threads in wall time gave 1.44x once (under `BF16_MIN_SPEEDUP`) and up to
    9.08x, at one thread in CPU time 4.25-4.43x (``benchmarks/amp_probe.py``,
    docs/performance.md "bf16 training")."""
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return 0.0
    # its own generator, as `products.speedup` has: a probe made inside a seeded run must not
    # move that run's random numbers
    generator = torch.Generator().manual_seed(0)
    weights = {torch.float32: torch.randn(hidden, 3 * hidden, generator=generator)}
    weights[torch.bfloat16] = weights[torch.float32].bfloat16()
    multiply = {torch.float32: products.mm, torch.bfloat16: torch.mm}
    best = dict.fromkeys(weights, float("inf"))
    products.active()  # the fp32 library is chosen (and timed) before, not inside, the first round
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for r in rows:
            for dtype, weight in weights.items():
                inputs = torch.randn(PROBE_STEPS * r, hidden, generator=generator).to(dtype)
                step = inputs[:r]
                start = time.thread_time()
                multiply[dtype](inputs, weight)
                for _ in range(PROBE_STEPS):
                    multiply[dtype](step, weight)
                best[dtype] = min(best[dtype], time.thread_time() - start)
    finally:
        torch.set_num_threads(before)
    return best[torch.float32] / max(best[torch.bfloat16], 1e-9)


def cpu_auto_dtype(hidden: int, cpu: Optional[hardware.CpuFeatures] = None) -> Tuple[Optional[torch.dtype], str]:
    """What ``train.amp: auto`` trains in on this CPU (or ``cpu``), and why (for the log)."""
    bf16, why = hardware.bf16_training(cpu or hardware.this_cpu(), hidden)
    return (torch.bfloat16, f"bf16 ({why})") if bf16 else (None, f"fp32 ({why})")
