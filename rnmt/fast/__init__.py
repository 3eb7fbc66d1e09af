"""Fast variants of rnmt's modules, swapped into a model after it is built.

Models, modules and units (`rnmt.models`, `rnmt.modules`, `rnmt.cells`) are written in plain
PyTorch: ``nn.Linear``, tensor operations, a unit's ``step`` as its paper's equations. The
CPU and GPU tricks live here, each as a subclass of the plain module it speeds up, with the
same parameters and state-dict keys (`registry.variant`):

========================  ======================================================  =====================
plain class               fast variant                                            file
========================  ======================================================  =====================
``nn.Linear`` (exactly)   `rnmt.products.Linear`: fp32 products through oneDNN   rnmt/products.py
`Cell` (every unit)       `FastCell`: deferred weight gradients, int8 twins       rnmt/fast/cells.py
`GRU`                     `FastGRU`: C++ sweep, CUDA cell, cuDNN, lockstep        rnmt/fast/cells.py
`LGRU`, `TGRU`            layer-norm sweep and lockstep (`ln_gates`)              rnmt/fast/cells.py
`Bidirectional`           `FastBidirectional`: both GRU directions in cuDNN       rnmt/fast/runner.py
`AttentionSteps`          `FastAttentionSteps`: score kernel, deferred gradients  rnmt/fast/attention.py
`TranslationModel`        the deferred-gradient scope around a training pass      this file
========================  ======================================================  =====================

`accelerate` swaps them in (``module.__class__ = variant``, as
``torch.ao.quantization.quantize_dynamic`` and ``ipex.optimize`` replace modules after a
model is built); `plain` swaps them back. Which path a variant then takes at each call
still follows the process's switches (`rnmt.products.use`, `rnmt.kernels.use`,
`rnmt.fast.gru_cuda.use`, `rnmt.deferred_grads.enabled`, `rnmt.fast.host_reads`), so an
accelerated model computes exactly what the models computed when these paths were written
into them; every variant falls back to its plain class's code where its path does not apply.

Adding a fast variant: one file here with a subclass of the plain module decorated
``@variant(PlainClass)``, imported below.
"""

from __future__ import annotations

from typing import Any, Optional

from torch import nn

from rnmt import deferred_grads, products
from rnmt.fast import attention, cells, runner  # noqa: F401  (registers their variants)
from rnmt.fast.registry import fast_class, plain_class, variant
from rnmt.models.base import TranslationModel

variant(nn.Linear, exact=True)(products.Linear)

_HOOKS = "_deferred_grad_hooks"  # the attribute holding a model's two hook handles


def accelerate(model: nn.Module, plan: Optional[Any] = None) -> nn.Module:
    """Swap the fast variant of every module of ``model`` in, in place; returns ``model``.

    Parameters, buffers, state-dict keys and module tree stay as they are, so it may run
    before or after a checkpoint is loaded. A `TranslationModel` also gets the hooks that
    open a deferred-gradient scope around each training forward pass (decoding never opens
    one). ``plan``: an execution plan whose ``fast_modules`` attribute, when false, leaves
    the model plain; None swaps every variant in. Calling it twice changes nothing more.
    """
    if plan is not None and not getattr(plan, "fast_modules", True):
        return model
    for module in model.modules():
        fast = fast_class(type(module))
        if fast is not None:
            module.__class__ = fast
        if isinstance(module, TranslationModel) and getattr(module, _HOOKS, None) is None:
            # A training pass sums each recurrent weight's gradient over the time steps in one
            # buffer (rnmt/deferred_grads.py); decoding (step) never opens the scope.
            pre = module.register_forward_pre_hook(deferred_grads.open_for_training)
            post = module.register_forward_hook(deferred_grads.close_after_forward, always_call=True)
            setattr(module, _HOOKS, (pre, post))
    return model


def plain(model: nn.Module) -> nn.Module:
    """Undo `accelerate`, in place: every module back to its plain class, the hooks removed;
    returns ``model``."""
    for module in model.modules():
        cls = plain_class(type(module))
        if cls is not None:
            module.__class__ = cls
        hooks = getattr(module, _HOOKS, None)
        if hooks is not None:
            for handle in hooks:
                handle.remove()
            delattr(module, _HOOKS)
    return model


def is_accelerated(model: nn.Module) -> bool:
    """Whether any module of ``model`` is a fast variant."""
    return any(plain_class(type(m)) is not None for m in model.modules())


__all__ = ["accelerate", "is_accelerated", "plain", "variant"]
