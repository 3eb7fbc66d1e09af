"""The optimisers a run can train with, by name (``train.optimizer``), each with its options
(``train.optimizer_options``).

The papers differ here: DTMT and ATR train with Adam, the Cseq2seq paper with Adadelta,
the survey's Luong and Sutskever systems with plain SGD. Each optimiser is one builder
registered in `OPTIMIZERS` (an `rnmt.registry.Registry`) under its name with the dataclass
of its own settings; what every optimiser reads (``train.lr``, ``train.weight_decay``) stays
in ``TrainConfig``. The learning rate each builder sets is only the start: the trainer
writes the schedule's rate into every parameter group before each update, so every
schedule works with every optimiser. Adding one is an options dataclass, a function and a
decorator here (docs/architecture.md, "Adding an optimiser").

A setting of one optimiser given with another (``optimizer_options: {nesterov: true}``
with Adam) is refused, as the flat keys of before (``train.nesterov``) are by
`rnmt.config.upgrade_train_keys`: it would do nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Dict, Iterable, List

import torch

from rnmt.config import NON_NEGATIVE, POSITIVE, PROBABILITY, TrainConfig
from rnmt.errors import UserError
from rnmt.registry import Registry, options_dict

Builder = Callable[[Iterable[torch.nn.Parameter], TrainConfig, Any], torch.optim.Optimizer]
OPTIMIZERS: Registry[Builder] = Registry("optimizer", "train.optimizer")


@dataclass(frozen=True)
class AdamOptions:
    """Kingma & Ba (2015): the decay rates of the moment estimates and the denominator's eps."""

    betas: List[Annotated[float, PROBABILITY]] = field(default_factory=lambda: [0.9, 0.999])
    eps: Annotated[float, POSITIVE] = 1e-8


@dataclass(frozen=True)
class AdadeltaOptions:
    """Zeiler (2012): the decay rate of the running averages and eps."""

    rho: Annotated[float, PROBABILITY] = 0.95
    eps: Annotated[float, POSITIVE] = 1e-6


@dataclass(frozen=True)
class SGDOptions:
    """Momentum (0: plain SGD) and Nesterov's variant of it (needs momentum > 0)."""

    momentum: Annotated[float, PROBABILITY] = 0.0
    nesterov: bool = False
    dampening: Annotated[float, NON_NEGATIVE] = 0.0


def register_optimizer(name: str, options: type) -> Callable[[Builder], Builder]:
    """Decorator: make a builder ``(params, train_config, options)`` selectable as
    ``train.optimizer: name``, ``options`` the dataclass of its ``train.optimizer_options``."""
    return OPTIMIZERS.register(name, options=options)


def optimizer_names() -> tuple:
    return OPTIMIZERS.names()


def optimizer_options(tc: TrainConfig) -> Any:
    """``tc.optimizer_options`` as the options dataclass of ``tc.optimizer``; a one-line
    `UserError` for an unknown optimiser, a key it does not have (naming the optimisers that
    do) or a value out of its range."""
    entry = OPTIMIZERS.get(tc.optimizer)
    owners = {f.name: n for n in optimizer_names() for f in dataclasses.fields(OPTIMIZERS.get(n).options)}
    own = {f.name for f in dataclasses.fields(entry.options)}
    for key in tc.optimizer_options or {}:
        if key not in own and key in owners:
            raise UserError(f"train.optimizer_options.{key} is a setting of optimizer '{owners[key]}', but "
                            f"train.optimizer is '{tc.optimizer}': it would do nothing; remove it or set "
                            f"train.optimizer: {owners[key]}")
    return OPTIMIZERS.parse_options(tc.optimizer, tc.optimizer_options, "train.optimizer_options")


def resolved_optimizer_options(tc: TrainConfig) -> Dict[str, Any]:
    """Every option of ``tc.optimizer``, defaults included, so that configs giving the same
    optimiser compare equal whichever defaults they write out; the options as given when
    they do not parse (the comparison then shows them as written)."""
    try:
        return options_dict(optimizer_options(tc))
    except UserError:
        return dict(tc.optimizer_options or {})


def build_optimizer(params: Iterable[torch.nn.Parameter], tc: TrainConfig) -> torch.optim.Optimizer:
    """The optimiser ``tc.optimizer`` over ``params``, with its options."""
    options = optimizer_options(tc)
    return OPTIMIZERS.get(tc.optimizer).target(params, tc, options)


@register_optimizer("adam", AdamOptions)
def _adam(params, tc: TrainConfig, options: AdamOptions) -> torch.optim.Optimizer:
    # Kingma & Ba (2015); rnmt's default and the DTMT and ATR papers' choice.
    if len(options.betas) != 2:
        raise UserError(f"train.optimizer_options.betas must be two numbers, got {options.betas!r}")
    beta1, beta2 = options.betas
    params = list(params)
    # PyTorch's fused kernel: one pass per parameter instead of about ten element-wise
    # operations (on a CPU the default is a Python loop over them; 5x faster here at the peer
    # size, docs/performance.md "Fused Adam"); the same update up to rounding.
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params)
    return torch.optim.Adam(params, lr=tc.lr, betas=(beta1, beta2), eps=options.eps,
                            weight_decay=tc.weight_decay, fused=fused or None)


@register_optimizer("adadelta", AdadeltaOptions)
def _adadelta(params, tc: TrainConfig, options: AdadeltaOptions) -> torch.optim.Optimizer:
    # Zeiler (2012), the Cseq2seq paper's optimiser (and dl4mt's); lr scales the update
    # (1.0 is Zeiler's rule as published).
    return torch.optim.Adadelta(params, lr=tc.lr, rho=options.rho, eps=options.eps, weight_decay=tc.weight_decay)


@register_optimizer("sgd", SGDOptions)
def _sgd(params, tc: TrainConfig, options: SGDOptions) -> torch.optim.Optimizer:
    # Plain SGD as in Luong et al. (2015) and Sutskever et al. (2014); momentum and
    # Nesterov's variant when asked for.
    if options.nesterov and (options.momentum <= 0 or options.dampening != 0):
        raise UserError("train.optimizer_options.nesterov needs momentum > 0 and dampening 0")
    return torch.optim.SGD(params, lr=tc.lr, momentum=options.momentum, nesterov=options.nesterov,
                           dampening=options.dampening, weight_decay=tc.weight_decay)
