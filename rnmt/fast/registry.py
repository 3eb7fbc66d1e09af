"""Which fast variant replaces which plain module class (`variant`), and the lookup that
`rnmt.fast.accelerate` and `rnmt.fast.plain` use.

A variant is registered for a plain class. A module whose class has no variant of its own
gets the variant of its nearest registered ancestor, mixed in before its own class: an
LSTM (no variant of its own) becomes ``FastLSTM(FastCell, LSTM)``, so every unit written
on `rnmt.cells.Cell` multiplies through the deferred-gradient products; a subclass that
defines a method the variant replaces keeps its plain class (its own method wins). ``exact=True``
registers for the class itself only: ``nn.Linear`` becomes `rnmt.products.Linear`, while
its subclasses (an int8 layer, ``nn.MultiheadAttention``'s output projection) stay.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Set, Type

from torch import nn

_VARIANTS: Dict[type, type] = {}  # plain class -> its fast variant
_EXACT: Set[type] = set()  # plain classes whose variant is not inherited by their subclasses
_MADE: Dict[type, type] = {}  # a plain subclass -> the variant made for it
_PLAIN: Dict[type, type] = {}  # every variant (registered or made) -> its plain class

Module = Type[nn.Module]


def variant(plain: type, exact: bool = False) -> Callable[[Module], Module]:
    """Class decorator: register the decorated class as ``plain``'s fast variant. It must be
    a subclass of ``plain`` that adds no parameters or buffers (a model's state dict and
    checkpoints are the same either way)."""

    def register(fast: Module) -> Module:
        if not issubclass(fast, plain):
            raise TypeError(f"{fast.__name__} must subclass {plain.__name__} to be its variant")
        _VARIANTS[plain] = fast
        _PLAIN[fast] = plain
        if exact:
            _EXACT.add(plain)
        return fast

    return register


def fast_class(cls: type) -> Optional[type]:
    """The fast variant of modules of class ``cls``, made (once) from its nearest registered
    ancestor's where it has none of its own; None where no variant applies (or ``cls`` is
    already one)."""
    if cls in _PLAIN:
        return None
    if cls in _VARIANTS:
        return _VARIANTS[cls]
    if cls in _MADE:
        return _MADE[cls]
    for ancestor in cls.__mro__[1:]:
        if ancestor in _VARIANTS and ancestor not in _EXACT:
            if _overrides(cls, ancestor, _VARIANTS[ancestor]):
                return None
            fast = type(f"Fast{cls.__name__}", (_VARIANTS[ancestor], cls),
                         {"__module__": cls.__module__, "__doc__": cls.__doc__})
            _MADE[cls] = fast
            _PLAIN[fast] = cls
            return fast
    return None


def _overrides(cls: type, ancestor: type, fast: type) -> bool:
    """Whether ``cls`` defines (between itself and ``ancestor``) a method that ``fast``
    replaces: mixing ``fast`` in would then silently drop the subclass's own method, so the
    subclass keeps its plain class."""
    replaced = {name for klass in fast.__mro__ if klass not in ancestor.__mro__ for name in vars(klass)
                if not name.startswith("__")}
    own = {name for klass in cls.__mro__[:cls.__mro__.index(ancestor)] for name in vars(klass)}
    return bool(replaced & own)


def plain_class(cls: type) -> Optional[type]:
    """The plain class of a fast variant; None for a class that is not one."""
    return _PLAIN.get(cls)
