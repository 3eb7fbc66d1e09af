"""Which models the export takes, and why the others cannot be expressed as the three graphs.

A model is exportable when its encode, init_state and step are computations whose loops run
over the source length only (scripted as ONNX ``Loop``s, `rnmt.export.loops`) and whose
decoder state is a fixed set of tensors. `UNEXPORTABLE` names the exceptions by their
architecture and says why in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from rnmt.errors import UserError
from rnmt.models.base import TranslationModel

# architecture -> why its graphs cannot be written (filled in as architectures are checked)
UNEXPORTABLE: Dict[str, str] = {}


def architecture_name(model: TranslationModel) -> str:
    from rnmt.models.registry import ARCHITECTURES

    for name in ARCHITECTURES.names():
        if ARCHITECTURES.get(name).target is type(model):
            return name
    return type(model).__name__


def check_exportable(model: TranslationModel, path: Path) -> None:
    """A one-line `UserError` naming ``path`` and the reason when ``model`` cannot be exported."""
    reason = UNEXPORTABLE.get(architecture_name(model))
    if reason is not None:
        raise UserError(f"{path}: a {architecture_name(model)} model cannot be exported: {reason}")
