"""Checkpoints: self-contained, safe to load, written atomically.

A model checkpoint is one safetensors file holding the weights, the sentencepiece
model(s) as byte tensors and, in its metadata, the resolved config. This module writes
them; reading and checking them is `rnmt.io.checkpoint_files`, one layer down, so that
`rnmt.models` can load a model without importing the trainer. Tied weights are stored
once and re-tied by the model's constructor.

The trainer's resumable state (optimiser, step, data position, random generators) is a
separate file written with ``torch.save`` and read back with ``weights_only=True``.

Every file is written to a temporary name in the same directory, flushed to disk and then
renamed over the target, so a crash mid-write never destroys the previous checkpoint.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch
from safetensors.torch import save_file

from rnmt.config import Config
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import FORMAT, FORMAT_VERSION


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` then move the finished file over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _unique_state(model: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """The state dict without the second name of tied (shared-storage) tensors."""
    seen, out = set(), {}
    for name, tensor in model.state_dict().items():
        key = (tensor.data_ptr(), tensor.shape, tensor.stride())
        if key in seen:
            continue
        seen.add(key)
        out["model." + name] = tensor.detach().contiguous().cpu()
    return out


def save_model(path: Path, model: torch.nn.Module, config: Config, vocabs: Dict[str, bytes],
               meta: Optional[Dict[str, Any]] = None) -> None:
    """Write a self-contained model checkpoint (weights + vocabularies + config)."""
    tensors = _unique_state(model)
    for side, blob in vocabs.items():
        tensors[f"vocab.{side}"] = torch.frombuffer(bytearray(blob), dtype=torch.uint8).clone()
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": json.dumps(config.to_dict()),
        "meta": json.dumps(meta or {}),
    }
    atomic_write(Path(path), lambda tmp: save_file(tensors, tmp, metadata=metadata))


def save_train_state(path: Path, state: Dict[str, Any]) -> None:
    atomic_write(Path(path), lambda tmp: torch.save(state, tmp))


def load_train_state(path: Path) -> Dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"cannot resume: {path} not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise UserError(f"{path}: corrupt or truncated training state ({str(exc).splitlines()[0][:120]})") from None
