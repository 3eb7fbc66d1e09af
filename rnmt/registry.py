"""Things chosen by name in a config: one mechanism for units, architectures and optimisers.

A `Registry` maps a name (``model.cell: atr``, ``model.arch: dtmt``,
``train.optimizer: sgd``) to what the name builds and to the dataclass of the options that
entry reads. Entries register themselves where they are defined::

    UNITS = Registry("unit", "model.cell")

    @UNITS.register("atr")                      # options: the constructor's keywords
    class ATR(Cell): ...

    @OPTIMIZERS.register("sgd", options=SGDOptions)
    def sgd(params, tc, options: SGDOptions) -> torch.optim.Optimizer: ...

`Registry.get` looks a name up; an unknown one is a one-line `UserError` naming the config
key, with the closest known name or the list of known names. `parse_options` checks a
mapping of options against an entry's dataclass (an unknown key names the entry and the
valid keys). A name is never registered twice for two different things: the later would
silently replace the first.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, Iterable, Mapping, Optional, Tuple, TypeVar

from rnmt.errors import UserError, shown, shown_key

T = TypeVar("T")
_CLOSE_MATCH_CHARS = 200  # a longer name is nobody's typo: no closest-name search


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered name: what it builds, its options dataclass and anything else the
    registry's users attach (an architecture's ``reads``)."""

    name: str
    target: T
    options: type
    extra: Mapping[str, Any] = field(default_factory=dict)


def closest(name: Any, known: Iterable[str]) -> Optional[str]:
    """The known name closest to ``name`` (a likely typo), or None."""
    if not isinstance(name, str) or len(name) > _CLOSE_MATCH_CHARS:
        return None
    close = difflib.get_close_matches(name, list(known), n=1)
    return close[0] if close else None


def options_from_signature(target: Callable, skip: Tuple[str, ...]) -> type:
    """A dataclass of ``target``'s keyword parameters (all but ``self`` and ``skip``), their
    defaults and annotations as written: for entries whose constructor is their options."""
    try:
        params = inspect.signature(target, eval_str=True).parameters
    except NameError:  # an annotation naming something the module imports only for type checking
        params = inspect.signature(target).parameters
    fields = []
    for p in params.values():
        if p.name in ("self", *skip) or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        kind = Any if p.annotation is p.empty else p.annotation
        fields.append((p.name, kind) if p.default is p.empty else (p.name, kind, field(default=p.default)))
    name = getattr(target, "__qualname__", "target").split(".")[0] + "Options"
    return dataclasses.make_dataclass(name, fields, frozen=True)


class Registry(Generic[T]):
    """Names of one kind (``kind``: "unit", "architecture", "optimizer") set by the config
    key ``key``; ``load``, when given, imports the modules whose entries register themselves
    (called before every lookup, cheap once done)."""

    def __init__(self, kind: str, key: str, load: Optional[Callable[[], None]] = None) -> None:
        self.kind, self.key, self._load = kind, key, load
        self._entries: Dict[str, Entry[T]] = {}

    def register(self, *names: str, options: Optional[type] = None,
                 options_skip: Tuple[str, ...] = (), **extra: Any) -> Callable[[T], T]:
        """Decorator: make the decorated class or function selectable by each of ``names``.
        ``options``: its options dataclass; None: one made from its constructor's (or the
        function's) keyword parameters, less ``options_skip``."""

        def wrap(target: T) -> T:
            kinds = options or options_from_signature(target, options_skip)  # type: ignore[arg-type]
            for name in names:
                old = self._entries.get(name)
                if old is not None and old.target is not target:
                    raise ValueError(f"{self.kind} '{name}' is registered twice "
                                     f"({_qualname(old.target)} and {_qualname(target)})")
                self._entries[name] = Entry(name, target, kinds, dict(extra))
            return target

        return wrap

    def names(self) -> Tuple[str, ...]:
        """The registered names, sorted."""
        if self._load:
            self._load()
        return tuple(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def get(self, name: Any) -> Entry[T]:
        """The entry called ``name``; a one-line `UserError` for an unknown name."""
        known = self.names()
        if name not in self._entries:
            close = closest(name, known)
            hint = f"; did you mean '{close}'?" if close else f"; known: {', '.join(known)}"
            raise UserError(f"unknown {self.key} {shown(name)}{hint}")
        return self._entries[name]

    def parse_options(self, name: str, given: Optional[Mapping[str, Any]], where: str) -> Any:
        """``given`` as the options dataclass of ``name`` (``where``: the config key that
        holds them, for the messages); unknown keys and wrong types are `UserError`s."""
        from rnmt.config import check_value  # the config's own type and range checks

        options = self.get(name).options
        fields = {f.name: f for f in dataclasses.fields(options)}
        values = {}
        for key, value in (given or {}).items():
            if key not in fields:
                close = closest(str(key), fields)
                hint = f"; did you mean '{close}'?" if close else ""
                raise UserError(f"{where}.{shown_key(key)} is not an "
                                f"option of {self.kind} '{name}'{hint} (valid: {', '.join(fields) or 'none'})")
            values[key] = check_value(options, key, value, key=f"{where}.{key}", noun="config key")
        return options(**values)


def _qualname(target: Any) -> str:
    return getattr(target, "__qualname__", repr(target))


def options_dict(options: Any) -> Dict[str, Any]:
    """Every option of a parsed options dataclass, defaults included, so two configs that
    give the same options (one leaving a default out, one writing it) compare equal."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
