"""Reading rnmt model files: one safetensors file per model, checked before use.

A model file holds the weights, the sentencepiece model(s) as byte tensors and, in its
metadata, the format marker, the format version and the resolved config. Loading it never
executes code from the file (safetensors stores raw tensors only). A file of an earlier
version is read through `MIGRATIONS`, one step per version (as fairseq's
``upgrade_state_dict``), so every checkpoint rnmt ever wrote keeps loading; files are never
rewritten. Reading sits below both `rnmt.models` (which rebuilds a model from a file) and
`rnmt.training` (which writes files in this format, `rnmt.training.checkpoint`), so neither has
to import the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Dict, Optional, Tuple

import torch
from safetensors import safe_open

from rnmt.config import Config, config_from_dict, upgrade_model_keys
from rnmt.errors import UserError

FORMAT = "rnmt-checkpoint"
FORMAT_VERSION = "2"


def _model_options_hold_architecture_keys(config: Dict[str, Any]) -> Dict[str, Any]:
    """1 -> 2: the keys only one architecture reads moved from the top of ``model:`` into
    ``model.options`` (`rnmt.config.MOVED_MODEL_KEYS`). Silent: a checkpoint cannot be edited
    by its user, so a warning at every load would only be noise."""
    return upgrade_model_keys(config, warn=False)


# format version -> (the next version, the step that brings a stored config to it); the
# weights and vocabularies have not changed between versions so far
MIGRATIONS: Dict[str, Tuple[str, Callable[[Dict[str, Any]], Dict[str, Any]]]] = {
    "1": ("2", _model_options_hold_architecture_keys),
}


def upgrade_stored_config(version: Any, config: Dict[str, Any]) -> Dict[str, Any]:
    """A checkpoint's stored config of format ``version`` as the current version writes it;
    a `UserError` for a version this rnmt does not know (a newer one)."""
    while version != FORMAT_VERSION:
        if version not in MIGRATIONS:
            known = ", ".join(sorted({*MIGRATIONS, FORMAT_VERSION}))
            raise UserError(f"checkpoint format version {version} is not supported (this rnmt reads versions "
                            f"{known}; a newer rnmt wrote it?)")
        version, step = MIGRATIONS[version]
        config = step(config)
    return config


@dataclass
class ModelFile:
    """What a checkpoint holds, before the model is built."""

    path: Path
    config: Config
    state: Dict[str, torch.Tensor]
    vocabs: Dict[str, bytes]
    meta: Dict[str, Any]


def read_model_file(path: Path) -> ModelFile:
    """Read and check a checkpoint; every failure is a one-line `UserError`."""
    path = Path(path)
    if path.is_dir():
        path = resolve_model_path(path)
    if not path.is_file():
        raise UserError(f"checkpoint not found: {path}")
    try:
        with safe_open(str(path), framework="pt") as fh:
            metadata = fh.metadata() or {}
            if metadata.get("format") != FORMAT:
                raise UserError(f"{path}: not an rnmt checkpoint (no '{FORMAT}' marker)")
            stored = upgrade_stored_config(metadata.get("format_version"), json.loads(metadata["config"]))
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}
        config = config_from_dict(stored, source=str(path), warn_deprecated=False)  # rnmt wrote it: quietly
        meta = _checked_meta(metadata.get("meta", "{}"), path)
    except UserError as exc:
        raise UserError(exc if str(exc).startswith(f"{path}:") else f"{path}: {exc}") from None
    except Exception as exc:  # safetensors raises several types for damaged files
        raise UserError(f"{path}: corrupt or truncated checkpoint ({first_line(exc)})") from None
    state = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    _check_finite(state, path)
    vocabs = {k[len("vocab."):]: bytes(v.numpy().tobytes()) for k, v in tensors.items() if k.startswith("vocab.")}
    return ModelFile(path, config, state, vocabs, meta)


def first_line(exc: BaseException, limit: int = 120) -> str:
    """The first line of an exception's message for a one-line error, or its class name
    when it has none (``EOFError()`` from a file cut short)."""
    lines = str(exc).strip().splitlines()
    return lines[0][:limit] if lines else type(exc).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(v) for v in value)


def _provenance(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("path", ""), str)
            and _optional(_is_int)(value.get("step")))


# meta key -> (what it must be, its check): the keys the trainer (`rnmt.training.trainer`)
# and `rnmt average` write; a key this rnmt does not know (a later one's) passes unread
META_TYPES: Dict[str, Tuple[str, Callable[[Any], bool]]] = {
    "step": ("an integer or null", _optional(_is_int)),
    "epoch": ("an integer or null", _optional(_is_int)),
    "dev_bleu": ("a number or null", _optional(_is_number)),
    "init_from": ("an object with a path and a step", _optional(_provenance)),
    "averaged": ("a list of paths", _list_of(lambda v: isinstance(v, str))),
    "steps": ("a list of integers or nulls", _list_of(_optional(_is_int))),
}


def _checked_meta(text: Any, path: Path) -> Dict[str, Any]:
    """The checkpoint's ``meta`` field: a JSON object whose known keys have their types, else
    a `UserError` calling the file corrupt (what reads it calls ``meta.get(...)`` and uses
    the values as numbers)."""
    try:
        meta = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise UserError(f"{path}: corrupt checkpoint metadata ('meta' is not JSON: {first_line(exc)})") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path}: corrupt checkpoint metadata ('meta' is a JSON {type(meta).__name__}, "
                        f"not an object)")
    for key, (what, check) in META_TYPES.items():
        if key in meta and not check(meta[key]):
            raise UserError(f"{path}: corrupt checkpoint metadata (meta '{key}' is {json.dumps(meta[key])[:40]}, "
                            f"not {what})")
    return meta


def _check_finite(state: Dict[str, torch.Tensor], path: Path) -> None:
    """Refuse weights holding NaN or infinity: a model built from them translates nothing.
    Training never writes them (`rnmt.training.trainer` checks before every save), so such a
    file was damaged or written by something else."""
    bad = [name for name, tensor in state.items()
           if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if bad:
        raise UserError(f"{path}: weight '{bad[0]}' is not finite (NaN or infinity; {len(bad)} of "
                        f"{len(state)} tensors): a damaged checkpoint, or one not written by rnmt training, "
                        f"which never saves non-finite weights")


def weights_mismatch(expected: Dict[str, torch.Size], given: Dict[str, torch.Tensor],
                     may_lack: Collection[str] = ()) -> Optional[str]:
    """What keeps ``given`` from filling ``expected`` name for name and shape for shape (the
    first problem, then counts), or None when it fits. ``may_lack`` names entries ``given``
    may leave out (tied duplicates)."""
    missing = [k for k in expected if k not in given and k not in may_lack]
    unexpected = [k for k in given if k not in expected]
    wrong_shape = [k for k in given if k in expected and tuple(expected[k]) != tuple(given[k].shape)]
    if not (missing or unexpected or wrong_shape):
        return None
    if missing:
        first = f"no '{missing[0]}'"
    elif unexpected:
        first = f"an unknown '{unexpected[0]}'"
    else:
        k = wrong_shape[0]
        first = f"'{k}' has shape {tuple(given[k].shape)}, the model {tuple(expected[k])}"
    return f"{first}; {len(missing)} missing, {len(unexpected)} unknown, {len(wrong_shape)} of another shape"


def load_state_into(model: torch.nn.Module, state: Dict[str, torch.Tensor], path: Path,
                    assign: bool = True) -> None:
    """Load weights, allowing only tied duplicates to be absent; anything else is a mismatch.
    ``assign=False`` only checks names and shapes (a model built on the meta device)."""
    expected = model.state_dict()
    tied = {name for name in expected if name not in state and _is_tied(model, name)}
    problem = weights_mismatch({k: v.shape for k, v in expected.items()}, state, may_lack=tied)
    if problem:
        raise UserError(f"{path}: weights do not match the model in its config ({problem})")
    if assign:
        model.load_state_dict(state, strict=False)


def _is_tied(model: torch.nn.Module, name: str) -> bool:
    params = dict(model.named_parameters(remove_duplicate=False))
    if name not in params:
        return False
    ptr = params[name].data_ptr()
    return any(p.data_ptr() == ptr and n != name for n, p in params.items())


def resolve_model_path(path: Path) -> Path:
    """A model directory resolves to its best checkpoint, else its newest one."""
    path = Path(path)
    if path.is_dir():
        for name in ("best.safetensors", "last.safetensors"):
            if (path / name).is_file():
                return path / name
        steps = sorted(path.glob("ckpt-*.safetensors"), key=lambda p: p.stat().st_mtime)
        if steps:
            return steps[-1]
        raise UserError(f"{path}: no checkpoint in this directory (expected best.safetensors)")
    return path
