"""Applying an execution plan: the process's switches set from it, then the model's fast
variants swapped in.

The switches are the ones the lower layers read (`rnmt.kernels`, `rnmt.products`,
`rnmt.int8`, `rnmt.memory`, `rnmt.deferred_grads`, `rnmt.fast.gru_cuda`); the plan is the
only thing that sets them for a run. Then ``rnmt.fast.accelerate`` swaps the fast variants
into the plain model (as ``torch.ao.quantization.quantize_dynamic`` swaps ``nn.Linear``).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from rnmt import deferred_grads, int8, kernels, memory, products
from rnmt.fast import accelerate as swap_fast_variants
from rnmt.fast import gru_cuda
from rnmt.plan.plan import ExecutionPlan

# The block-scoped switches (`deferred_grads.enabled`, `gru_cuda.use`) held open for the
# process; a later plan closes them (restoring the defaults) before opening its own.
_held = ExitStack()


def apply_process(plan: ExecutionPlan) -> None:
    """Set the process-wide switches to ``plan``'s choices."""
    memory.configure(plan.memory_bounds.value, plan.trim_every.value, plan.heap_buffers.value)
    kernels.configure(plan.kernels.value, plan.kernel_lock_timeout.value)
    products.set_choice(plan.fp32_products.value == "onednn")
    int8.set_engine(plan.int8_kernels.value)
    _held.close()
    _held.enter_context(deferred_grads.enabled(plan.deferred_grads.value))
    _held.enter_context(gru_cuda.use(bool(plan.gpu_fused_gru.value)))


def accelerate(model: Any, plan: ExecutionPlan) -> Any:
    """The fast variants swapped into ``model`` (in place); returns the model."""
    result = swap_fast_variants(model, plan)
    return model if result is None else result


def apply_plan(plan: ExecutionPlan, model: Any = None) -> Any:
    """`apply_process`, then (given a model) `accelerate`; returns the model."""
    apply_process(plan)
    return model if model is None else accelerate(model, plan)
