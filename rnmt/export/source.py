"""The model an export is made from: a run directory or a checkpoint, as plain PyTorch.

`rnmt translate` loads a model through `rnmt.models.loading.load_model`, which swaps in
the CPU-fast variants (`rnmt.fast`; C++ kernels, lockstep encoders) that tracing cannot see
through. Here the same checks and weights build the plain architecture instead
(``build_model(..., accelerated=False)``): the same parameters, the same function. Reading
goes through rnmt's checkpoint reader, which refuses anything but a safetensors file of
rnmt's format and never runs code from the file.
"""

from __future__ import annotations

from pathlib import Path

from rnmt.errors import UserError
from rnmt.io.checkpoint_files import load_state_into, resolve_model_path
from rnmt.models.loading import LoadedModel, read_checked
from rnmt.models.registry import build_model


def checkpoint_file(path: str | Path) -> Path:
    """The checkpoint file of a run directory (its best checkpoint) or the file itself."""
    given = Path(path)
    if not given.exists():
        raise UserError(f"{given}: no such run directory or checkpoint")
    return resolve_model_path(given) if given.is_dir() else given


def load_plain(path: str | Path) -> LoadedModel:
    """The checkpoint's model in eval mode on the CPU, without the fast variants."""
    file = checkpoint_file(path)
    mf, src_vocab, tgt_vocab = read_checked(file)
    model = build_model(mf.config.model, src_vocab.size, tgt_vocab.size, accelerated=False)
    load_state_into(model, mf.state, mf.path)
    model.eval()
    return LoadedModel(model, src_vocab, tgt_vocab, mf.config, mf.meta, mf.path)

