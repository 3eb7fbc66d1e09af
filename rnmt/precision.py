"""Where CPU bf16 autocast meets rnmt's fp32 kernels.

Under ``torch.autocast("cpu", dtype=torch.bfloat16)`` (``train.amp: bf16``) every matrix
product runs in bf16 and returns bf16. rnmt's fused element-wise kernels (GRU gates,
layer-normalised gates, additive attention scores; `rnmt.kernels`) compute in fp32: they
take their bf16 inputs cast up (one element-wise copy of a step's rows, far cheaper than the
dozen bf16 element-wise kernels of the PyTorch expression they replace) and return fp32.
The next product casts its operand down again. So gates, states, layer-norm statistics,
attention scores and the loss keep fp32 arithmetic while the products run at the bf16
rate (docs/performance.md, "bf16 training").
"""

from __future__ import annotations

import torch
from torch import Tensor


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
