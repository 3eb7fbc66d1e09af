"""Applying an execution plan: the process's switches set from it, then the model's fast
variants swapped in.

The switches are the ones the lower layers read (`rnmt.kernels`, `rnmt.products`,
`rnmt.int8`, `rnmt.memory`, `rnmt.deferred_grads`, `rnmt.cells.gru_cuda`); the plan is the
only thing that sets them for a run. Where the package has `rnmt.fast` (fast variants of
plain PyTorch layers, swapped in after the model is built, as
``torch.ao.quantization.quantize_dynamic`` swaps ``nn.Linear``), ``rnmt.fast.accelerate``
is called with the model and the plan.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from contextlib import ExitStack
from types import ModuleType
from typing import Any, Optional

from rnmt import int8, kernels, memory, products
from rnmt.plan.plan import ExecutionPlan

# The block-scoped switches (`deferred_grads.enabled`, `gru_cuda.use`) held open for the
# process; a later plan closes them (restoring the defaults) before opening its own.
_held = ExitStack()


def _first_module(*names: str) -> Optional[ModuleType]:
    """The first of ``names`` the package has (a fast variant may live in `rnmt.fast`)."""
    for name in names:
        try:
            if importlib.util.find_spec(name) is not None:
                return importlib.import_module(name)
        except ModuleNotFoundError:  # a parent package that is not there
            continue
    return None


def apply_process(plan: ExecutionPlan) -> None:
    """Set the process-wide switches to ``plan``'s choices."""
    memory.configure(plan.memory_bounds.value, plan.trim_every.value)
    kernels.configure(plan.kernels.value, plan.kernel_lock_timeout.value)
    products.set_choice(plan.fp32_products.value == "onednn")
    int8.set_engine(plan.int8_kernels.value)
    _held.close()
    deferred = _first_module("rnmt.deferred_grads", "rnmt.fast.deferred_grads")
    if deferred is not None:
        _held.enter_context(deferred.enabled(plan.deferred_grads.value))
    gru_cuda = _first_module("rnmt.cells.gru_cuda", "rnmt.fast.gru_cuda")
    if gru_cuda is not None:
        _held.enter_context(gru_cuda.use(bool(plan.gpu_fused_gru.value)))


def accelerate(model: Any, plan: ExecutionPlan) -> Any:
    """``rnmt.fast.accelerate`` on ``model`` where the package has it; returns the model."""
    if importlib.util.find_spec("rnmt.fast") is None:
        return model
    fast = importlib.import_module("rnmt.fast")
    swap = getattr(fast, "accelerate", None)
    if swap is None:
        return model
    takes_plan = len(inspect.signature(swap).parameters) >= 2
    result = swap(model, plan) if takes_plan else swap(model)
    return model if result is None else result


def apply_plan(plan: ExecutionPlan, model: Any = None) -> Any:
    """`apply_process`, then (given a model) `accelerate`; returns the model."""
    apply_process(plan)
    return model if model is None else accelerate(model, plan)
