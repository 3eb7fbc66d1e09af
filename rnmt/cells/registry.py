"""Units by name: ``build("atr", 620, 1000, layer_norm=True)``.

Every unit class registers itself with `register`; `build` checks the options against the
unit's constructor so a typo in a config fails with one line naming the option.
"""

from __future__ import annotations

import inspect
from typing import Callable, Dict, Tuple, Type

from rnmt.errors import UserError

_REGISTRY: Dict[str, Type] = {}


def register(name: str) -> Callable[[Type], Type]:
    """Class decorator: make a unit selectable by ``name``."""

    def wrap(cls: Type) -> Type:
        if name in _REGISTRY:
            raise ValueError(f"unit name {name!r} registered twice")
        _REGISTRY[name] = cls
        cls.unit_name = name
        return cls

    return wrap


def registered_names() -> Tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def unit_options(name: str) -> Tuple[str, ...]:
    """The option names a unit accepts (everything of its constructor but the two sizes)."""
    params = inspect.signature(_REGISTRY[name].__init__).parameters
    return tuple(p for p in params if p not in ("self", "input_size", "hidden_size"))


def build(name: str, input_size: int, hidden_size: int, **options):
    """Build the unit called ``name`` with the given sizes and options.

    Raises:
        UserError: for an unknown unit name or an option the unit does not have.
    """
    if name not in _REGISTRY:
        raise UserError(f"unknown cell {name!r} (valid: {', '.join(registered_names())})")
    valid = unit_options(name)
    for key in options:
        if key not in valid:
            raise UserError(f"cell {name!r}: unknown option {key!r} (valid: {', '.join(valid)})")
    return _REGISTRY[name](input_size, hidden_size, **options)
