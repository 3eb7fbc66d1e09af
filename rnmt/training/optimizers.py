"""The optimisers a run can train with, by name (``train.optimizer``).

The papers differ here: DTMT and ATR train with Adam, the Cseq2seq paper with Adadelta,
the survey's Luong and Sutskever systems with plain SGD. Each optimiser is one builder
registered under its name; a builder reads its own settings from the train config. The
learning rate each builder sets is only the start: the trainer writes the schedule's rate
into every parameter group before each update, so every schedule works with every
optimiser. Adding one is a function and a decorator here, plus its settings in
``TrainConfig``.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable

import torch

from rnmt.config import TrainConfig
from rnmt.errors import UserError

Builder = Callable[[Iterable[torch.nn.Parameter], TrainConfig], torch.optim.Optimizer]
_OPTIMIZERS: Dict[str, Builder] = {}


def register_optimizer(name: str) -> Callable[[Builder], Builder]:
    def add(builder: Builder) -> Builder:
        if name in _OPTIMIZERS:
            raise ValueError(f"optimizer '{name}' is registered twice")
        _OPTIMIZERS[name] = builder
        return builder

    return add


def optimizer_names() -> tuple:
    return tuple(_OPTIMIZERS)


def build_optimizer(params: Iterable[torch.nn.Parameter], tc: TrainConfig) -> torch.optim.Optimizer:
    """The optimiser ``tc.optimizer`` over ``params``."""
    try:
        builder = _OPTIMIZERS[tc.optimizer]
    except KeyError:
        raise UserError(f"unknown train.optimizer '{tc.optimizer}'; choose one of "
                        f"{', '.join(_OPTIMIZERS)}") from None
    return builder(params, tc)


@register_optimizer("adam")
def _adam(params, tc: TrainConfig) -> torch.optim.Optimizer:
    # Kingma & Ba (2015); rnmt's default and the DTMT and ATR papers' choice.
    if len(tc.adam_betas) != 2:
        raise UserError(f"train.adam_betas must be two numbers, got {tc.adam_betas!r}")
    beta1, beta2 = tc.adam_betas
    params = list(params)
    # PyTorch's fused kernel: one pass per parameter instead of about ten element-wise
    # operations (on a CPU the default is a Python loop over them; 5x faster here at the peer
    # size, docs/performance.md "Fused Adam"); the same update up to rounding.
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params)
    return torch.optim.Adam(params, lr=tc.lr, betas=(beta1, beta2), eps=tc.adam_eps,
                            weight_decay=tc.weight_decay, fused=fused or None)


@register_optimizer("adadelta")
def _adadelta(params, tc: TrainConfig) -> torch.optim.Optimizer:
    # Zeiler (2012), the Cseq2seq paper's optimiser (and dl4mt's); lr scales the update
    # (1.0 is Zeiler's rule as published).
    return torch.optim.Adadelta(params, lr=tc.lr, rho=tc.adadelta_rho, eps=tc.adadelta_eps,
                                weight_decay=tc.weight_decay)


@register_optimizer("sgd")
def _sgd(params, tc: TrainConfig) -> torch.optim.Optimizer:
    # Plain SGD as in Luong et al. (2015) and Sutskever et al. (2014); momentum and
    # Nesterov's variant when asked for.
    if tc.nesterov and tc.momentum <= 0:
        raise UserError("train.nesterov needs train.momentum > 0")
    return torch.optim.SGD(params, lr=tc.lr, momentum=tc.momentum, nesterov=tc.nesterov,
                           weight_decay=tc.weight_decay)
