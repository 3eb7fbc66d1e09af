"""Typed architecture options: each architecture registers a dataclass of the extras it
reads from ``model.options`` and names the ``model.*`` keys it reads, so a misspelled or
unused key is an error with the closest valid name instead of being ignored."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any, Dict, Iterable, Optional

from rnmt.errors import UserError

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


def _check_type(arch: str, key: str, value: Any, annotation: Any) -> Any:
    allowed = typing.get_args(annotation) or (annotation,)
    if value is None and type(None) in allowed:
        return None
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
    raise UserError(f"model.options.{key} of arch '{arch}' must be {names}, got {value!r}")


def parse_options(arch: str, options_type: type, given: Optional[Dict[str, Any]]) -> Any:
    """``model.options`` as the architecture's dataclass: unknown keys and wrong types are
    a `UserError` naming the key (and the closest valid one)."""
    hints = typing.get_type_hints(options_type)
    fields = {f.name for f in dataclasses.fields(options_type)}
    values = {}
    for key, value in (given or {}).items():
        if key not in fields:
            valid = ", ".join(sorted(fields)) or "none"
            raise UserError(f"model.options.{key} is not an option of arch '{arch}'{_closest(key, fields)} "
                            f"(valid: {valid})")
        values[key] = _check_type(arch, key, value, hints[key])
    return options_type(**values)


def check_unused_keys(arch: str, cfg: Any, reads: Iterable[str]) -> None:
    """A ``model.*`` key set to something other than its default that ``arch`` does not read
    is an error: the config would claim a model it does not build."""
    read = set(COMMON_KEYS) | set(reads)
    defaults = type(cfg)()
    for f in dataclasses.fields(cfg):
        if f.name in read:
            continue
        if getattr(cfg, f.name) != getattr(defaults, f.name):
            raise UserError(f"model.{f.name} is not read by arch '{arch}' (set to {getattr(cfg, f.name)!r}); "
                            f"remove it (keys this arch reads: {', '.join(sorted(read - {'options'}))})")
