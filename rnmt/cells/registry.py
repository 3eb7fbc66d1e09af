"""Units by name: ``build("atr", 620, 1000, layer_norm=True)``.

Every unit class registers itself with `register` (the `rnmt.registry.Registry` of units);
its options are its constructor's keyword arguments (``layer_norm``, ``dropout`` and its
own, e.g. ``reset_bias``), so `build` checks the options against them and a typo in a
config fails with one line naming the option.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Tuple, Type

from rnmt.errors import UserError, shown
from rnmt.registry import Registry, closest

SIZES = ("input_size", "hidden_size")  # given by the model, not options
UNITS: Registry[Type] = Registry("unit", "model.cell")


def register(name: str, options: type | None = None) -> Callable[[Type], Type]:
    """Class decorator: make a unit selectable by ``name``; ``options``: its options
    dataclass (default: one made from the constructor's keyword arguments)."""

    def wrap(cls: Type) -> Type:
        UNITS.register(name, options=options, options_skip=SIZES)(cls)
        cls.unit_name = name
        return cls

    return wrap


def registered_names() -> Tuple[str, ...]:
    return UNITS.names()


def unit_options(name: str) -> Tuple[str, ...]:
    """The option names a unit accepts (everything of its constructor but the two sizes)."""
    return tuple(f.name for f in dataclasses.fields(UNITS.get(name).options))


def build(name: str, input_size: int, hidden_size: int, **options):
    """Build the unit called ``name`` with the given sizes and options.

    Raises:
        UserError: for an unknown unit name or an option the unit does not have.
    """
    if name not in UNITS:
        raise UserError(f"unknown cell {shown(name)} (valid: {', '.join(registered_names())})")
    valid = unit_options(name)
    for key in options:
        if key not in valid:
            close = closest(key, valid)
            hint = f"; did you mean '{close}'?" if close else ""
            raise UserError(f"cell {name!r}: unknown option {shown(key)}{hint} (valid: {', '.join(valid)})")
    return UNITS.get(name).target(input_size, hidden_size, **options)
