"""Architecture registry: config name -> builder.

Model files register themselves with ``@register("name", options=..., reads=...)``;
`build_model` looks the name up. Every module of the ``rnmt.models`` package is imported
before a name is looked up, so adding an architecture is one new module there (its model,
its options dataclass, its ``register``) and a config: no training, search, serving or
registry code changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Dict, Sequence

import torch

from rnmt import cells
from rnmt.config import ModelConfig
from rnmt.errors import UserError, shown
from rnmt.models.base import TranslationModel
from rnmt.models.options import NoOptions, check_unused_keys, options_dict, parse_options
from rnmt.registry import Registry, closest


@dataclass(frozen=True)
class Architecture:
    """A registered architecture: its builder ``(cfg, src_vocab, tgt_vocab, options)``, the
    dataclass of its ``model.options`` and the ``model.*`` keys it reads beyond the common
    ones (`rnmt.models.options.COMMON_KEYS`)."""

    builder: Callable[[ModelConfig, int, int, Any], TranslationModel]
    options: type
    reads: Sequence[str]


def _load_all() -> None:
    for module in model_modules():
        importlib.import_module(module)


ARCHITECTURES: Registry[Callable[..., TranslationModel]] = Registry("architecture", "model.arch", load=_load_all)


def register(*names: str, options: type = NoOptions, reads: Sequence[str] = ()):
    """Register a builder under ``names`` with its options dataclass and read keys (an entry
    of `ARCHITECTURES`). The builder is usually the model class itself, constructed as
    ``Model(cfg, src_vocab, tgt_vocab, options)``."""
    return ARCHITECTURES.register(*names, options=options, reads=tuple(reads))


def architecture(name: str) -> Architecture:
    entry = ARCHITECTURES.get(name)
    return Architecture(entry.target, entry.options, entry.extra["reads"])


def check_model_config(cfg: ModelConfig) -> Any:
    """Validate ``cfg`` against its architecture; returns the typed options."""
    arch = architecture(cfg.arch)
    units = cells.registered_names()
    for key in ("cell", "enc_cell", "dec_cell"):
        name = getattr(cfg, key)
        if name is not None and name not in units:
            close = closest(name, units)
            hint = f"; did you mean '{close}'?" if close else f"; known: {', '.join(units)}"
            raise UserError(f"unknown model.{key} {shown(name)}{hint}")
    check_unused_keys(cfg.arch, cfg, arch.reads)
    return parse_options(cfg.arch, arch.options, cfg.options)


def model_modules() -> list:
    """Every module of the ``rnmt.models`` package: importing one registers the
    architectures it defines (the others, such as ``base`` or ``units``, define none)."""
    import rnmt.models

    return sorted(f"rnmt.models.{m.name}" for m in pkgutil.iter_modules(rnmt.models.__path__))


def resolved_options(cfg: ModelConfig) -> Dict[str, Any]:
    """``cfg.options`` with every option of its architecture, defaults included, so that
    configs giving the same model compare equal whichever defaults they write out; the
    options as given when they do not parse (the comparison then shows them as written)."""
    try:
        return options_dict(check_model_config(cfg))
    except UserError:
        return dict(cfg.options)


def architectures() -> list:
    return list(ARCHITECTURES.names())


def build_model(cfg: ModelConfig, src_vocab_size: int | None = None, tgt_vocab_size: int | None = None,
                accelerated: bool = True) -> TranslationModel:
    """Build the architecture ``cfg.arch``; vocabulary sizes default to the config's.

    The architectures are plain PyTorch; ``accelerated`` (the default) then swaps their
    fast variants in (`rnmt.fast.accelerate`: the same parameters, the same numbers as the
    fast paths give), which is the one place a built model meets the speed machinery."""
    src_v = src_vocab_size or cfg.src_vocab_size
    tgt_v = tgt_vocab_size or cfg.tgt_vocab_size
    if not src_v or not tgt_v:
        raise UserError("model.src_vocab_size and model.tgt_vocab_size are needed to build a model without data")
    options = check_model_config(cfg)
    model = architecture(cfg.arch).builder(cfg, int(src_v), int(tgt_v), options)
    if not accelerated:
        return model
    from rnmt.fast import accelerate  # rnmt.fast imports the models' base class

    accelerate(model)  # in place
    return model


def build_skeleton(cfg: ModelConfig, src_vocab_size: int | None = None,
                   tgt_vocab_size: int | None = None) -> TranslationModel:
    """`build_model` on PyTorch's meta device: shapes only, no memory, no initialisation.

    Checks a config without training or loading anything. A module's own argument check
    (it knows no config keys) becomes a one-line `UserError` too.
    """
    try:
        with torch.device("meta"):
            return build_model(cfg, src_vocab_size, tgt_vocab_size)
    except UserError:
        raise
    except (ValueError, TypeError, RuntimeError, AssertionError) as exc:  # torch asserts some arguments
        message = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise UserError(f"the model section of the config does not build: {message[:200]}") from None
