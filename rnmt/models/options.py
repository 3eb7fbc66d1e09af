"""Typed architecture options: each architecture registers a dataclass of the extras it
reads from ``model.options`` and names the ``model.*`` keys it reads, so a misspelled or
unused key is an error with the closest valid name instead of being ignored.

Where a key goes: one that several architectures in different modules read is a field of
`rnmt.config.ModelConfig` (sizes, vocabularies, dropout, the units' keys, ``readout``,
``enc_layers`` / ``dec_layers``, ``attention_heads``, the hybrids' ``encoder`` and
``encoder_norm``); one that only one architecture reads (or one family in one module, as
``context`` for both Cseq2seq models) is a field of that architecture's options dataclass,
in its module. A field is typed as a config key is: ``bool``, ``int``, ``float``, ``str``,
``Optional[...]``, a ``Literal`` of names or an ``Annotated[int, Range(...)]``; one without
a default must be given.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Annotated, Any, Dict, Iterable, Literal, Optional, Union

from rnmt.config import Range
from rnmt.errors import UserError, shown, shown_key

# model.* keys every architecture reads.
COMMON_KEYS = ("arch", "emb_size", "hidden_size", "src_vocab_size", "tgt_vocab_size", "dropout",
               "tie_target_embeddings", "options")
# ... and every recurrent one, through its units (`rnmt.models.units.build_cell`).
UNIT_KEYS = ("cell", "enc_cell", "dec_cell", "rnn_dropout", "layer_norm", "cell_options")


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """An architecture without extras."""


NO_OPTIONS = NoOptions()


def _closest(name: str, valid: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(valid), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


_show = shown


def _check_type(arch: str, key: str, value: Any, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    where = f"model.options.{key} of arch '{arch}'"
    if origin is Annotated:
        base, *bounds = typing.get_args(annotation)
        value = _check_type(arch, key, value, base)
        for bound in bounds:
            if value is not None and isinstance(bound, Range) and not bound.holds(value):
                raise UserError(f"{where} must be {bound.describe()}, got {_show(value)}")
        return value
    if origin is Literal:
        choices = typing.get_args(annotation)
        if isinstance(value, str) and value in choices:
            return value
        hint = _closest(value, [str(c) for c in choices]) if isinstance(value, str) else ""
        raise UserError(f"{where} must be one of {', '.join(map(str, choices))}, got {_show(value)}{hint}")
    allowed = typing.get_args(annotation) if origin is Union else (annotation,)
    if value is None and type(None) in allowed:
        return None
    compound = [k for k in allowed if typing.get_origin(k) in (Annotated, Literal)]
    if compound:  # Optional[Literal[...]], Optional[Annotated[...]]
        return _check_type(arch, key, value, compound[0])
    for kind in allowed:
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
    names = " or ".join("null" if k is type(None) else k.__name__ for k in allowed)
    raise UserError(f"{where} must be {names}, got {_show(value)}")


def parse_options(arch: str, options_type: type, given: Optional[Dict[str, Any]]) -> Any:
    """``model.options`` as the architecture's dataclass: unknown keys, wrong types and
    missing required ones are a `UserError` naming the key (and the closest valid one)."""
    hints = typing.get_type_hints(options_type, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(options_type)}
    values = {}
    for key, value in (given or {}).items():
        if key not in fields:
            valid = ", ".join(sorted(fields)) or "none"
            hint = _closest(str(key), fields)
            raise UserError(f"model.options.{shown_key(key)} is not an option of arch '{arch}'{hint} "
                            f"(valid: {valid})")
        values[key] = _check_type(arch, key, value, hints[key])
    for name, f in fields.items():
        if name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            choices = typing.get_args(hints[name]) if typing.get_origin(hints[name]) is Literal else ()
            what = f": one of {', '.join(map(str, choices))}" if choices else ""
            raise UserError(f"arch '{arch}' needs model.options.{name}{what}")
    return options_type(**values)


def options_dict(options: Any) -> Dict[str, Any]:
    """Every option of a parsed options dataclass, defaults included: two configs that give
    the same options, one leaving a default out and one writing it, compare equal."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


def check_unused_keys(arch: str, cfg: Any, reads: Iterable[str]) -> None:
    """A ``model.*`` key set to something other than its default that ``arch`` does not read
    is an error: the config would claim a model it does not build."""
    read = set(COMMON_KEYS) | set(reads)
    defaults = type(cfg)()
    for f in dataclasses.fields(cfg):
        if f.name in read:
            continue
        if getattr(cfg, f.name) != getattr(defaults, f.name):
            raise UserError(f"model.{f.name} is not read by arch '{arch}' (set to {_show(getattr(cfg, f.name))}); "
                            f"remove it (keys this arch reads: {', '.join(sorted(read - {'options'}))})")
