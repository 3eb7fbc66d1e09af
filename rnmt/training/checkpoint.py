"""Checkpoints: self-contained, safe to load, written atomically.

A model checkpoint is one safetensors file holding the weights, the sentencepiece
model(s) as byte tensors and, in its metadata, the resolved config. This module writes
them; reading and checking them is `rnmt.io.checkpoint_files`, one layer down, so that
`rnmt.models` can load a model without importing the trainer. Tied weights are stored
once and re-tied by the model's constructor.

The trainer's resumable state (optimiser, step, data position, random generators) is a
separate file written with ``torch.save`` and read back with ``weights_only=True``.

Every file is written to a temporary name in the same directory, flushed to disk, renamed
over the target and the directory fsynced, so a crash mid-write never destroys the previous
checkpoint and a finished write survives a power cut. Before a model is built from a
checkpoint, its tensors' shapes are checked against the shapes its config implies (computed
without allocating), so a file whose metadata asks for a huge model is rejected, not built.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch
from safetensors.torch import save as safetensors_bytes

from rnmt.config import Config
from rnmt.errors import UserError, write_failure
from rnmt.io.checkpoint_files import FORMAT, FORMAT_VERSION, first_line


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a crash after ``os.replace`` could otherwise
    bring back the old directory entry). Platforms without directory fds skip it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_for_write(path: str):
    """The file object every checkpoint byte goes through (tests replace it to simulate a
    full disk)."""
    return open(path, "wb")


def atomic_write(path: Path, write: Callable[[Any], None]) -> None:
    """Call ``write(fh)`` on a temporary file, fsync it, move it over ``path`` and fsync the
    directory, so ``path`` is always either the old or the complete new file.

    The file gets the mode a plain ``open`` would (0666 less the umask), not mkstemp's 0600,
    so a server running as another user of the group can read it. A write the system refuses
    (a full disk, a file size limit, a read-only or foreign directory) is a one-line
    `UserError` naming the file; the previous version of ``path`` is untouched.
    """
    path = Path(path)
    tmp = None
    try:
        target = _existing_target(path)
        if target is not None and stat.S_ISDIR(target.st_mode):
            raise UserError(f"{path}: is a directory, not a file to write")
        if target is not None and not stat.S_ISREG(target.st_mode):
            _write_in_place(path, write)  # a device or pipe: a rename would replace the node
            return
        if path.is_symlink():  # write the file the link points to and keep the link
            path = Path(os.path.realpath(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())
        with _open_for_write(tmp) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):  # a read-only file system refuses this too
                os.unlink(tmp)
        if isinstance(exc, OSError):
            what, advice = write_failure(exc)
            raise UserError(f"{path}: {what} while writing it; the previous version of the file "
                            f"(if any) is intact: {advice}") from None
        raise


def _existing_target(path: Path) -> Optional[os.stat_result]:
    """What ``path`` names once links are followed; None where nothing exists there yet."""
    try:
        return os.stat(path)
    except OSError:
        return None


def _write_in_place(path: Path, write: Callable[[Any], None]) -> None:
    """``write(fh)`` straight into ``path`` (a device such as /dev/stdout, or a FIFO), where
    nothing can be kept of a previous version anyway."""
    with _open_for_write(str(path)) as fh:
        write(fh)
        fh.flush()


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


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
    blob = safetensors_bytes(tensors, metadata=metadata)
    atomic_write(Path(path), lambda fh: fh.write(blob))


def save_train_state(path: Path, state: Dict[str, Any]) -> None:
    buffer = io.BytesIO()  # serialised first: write errors then come from our own file object
    torch.save(state, buffer)
    atomic_write(Path(path), lambda fh: fh.write(buffer.getbuffer()))


# What `torch.save` writes (a zip archive); a file starting otherwise is not rnmt's state.
ZIP_MAGIC = b"PK\x03\x04"


def load_train_state(path: Path) -> Dict[str, Any]:
    """The dict `save_train_state` wrote, read without running code from the file; anything
    else is a one-line `UserError` naming ``path`` (torch's own warnings and its paragraph
    about ``weights_only`` never reach the terminal)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"cannot resume: {path} not found")
    with open(path, "rb") as fh:
        head = fh.read(len(ZIP_MAGIC))
    if head != ZIP_MAGIC:
        raise UserError(f"{path}: " + _not_an_archive(head))
    try:
        with warnings.catch_warnings():  # e.g. "Detected pickle protocol 4": the error below says it all
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)  # never runs code from the file
    except Exception as exc:
        raise UserError(f"{path}: corrupt or truncated training state ({_load_failure(exc)})") from None
    if not isinstance(state, dict):
        raise UserError(f"{path}: corrupt or truncated training state (it holds a {type(state).__name__}, "
                        f"not rnmt's dict of training state)")
    return state


def _not_an_archive(head: bytes) -> str:
    """Why a file that does not start like `torch.save`'s zip archive cannot be resumed."""
    if head[:1] == b"\x80":  # a pickle's PROTO opcode: pickle.dump's output, not torch.save's
        return ("not an rnmt training state: a raw pickle, where rnmt writes a torch.save archive "
                "(nothing in it was loaded or run)")
    what = "empty" if not head else "not a torch.save archive"
    return f"corrupt or truncated training state ({what})"


def _load_failure(exc: BaseException) -> str:
    """What went wrong, in a few words: torch's refusals of an object start with a paragraph
    of advice about ``weights_only``; the refused class or pickle instruction is the news."""
    text = str(exc)
    if not text.startswith("Weights only load failed"):
        return first_line(exc)
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    what = f"it holds a {found.group(1)}" if found else "it holds objects other than tensors and plain values"
    if found is None and (operand := re.search(r"Unsupported operand \d+", text)):
        what = f"an instruction the weights-only loader refuses ({operand.group(0).lower()})"
    return f"{what[:160]}; nothing in it was run"
