"""rnmt's models without PyTorch: translate with an export directory (``rnmt export``)
using onnxruntime, sentencepiece and numpy only.

    import rnmt_runtime
    translator = rnmt_runtime.load("export/")
    translator.translate(["Y dijo Dios: sea la luz."])[0][0].text

Nothing here imports torch or rnmt's training package (a test holds it so); docs/deploy.md
("Runtime") tells how to install it on its own and what it does not do. The names below
are imported when first used, so that ``rnmt`` can ask `rnmt_runtime.cli.dispatches`
without loading onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_NAMES = {"ExportError": "errors", "is_export_dir": "manifest", "load_manifest": "manifest", "Sampling": "sampling",
          "Options": "translator", "Translation": "translator", "Translator": "translator", "load": "translator"}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'rnmt_runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"rnmt_runtime.{_NAMES[name]}"), name)
