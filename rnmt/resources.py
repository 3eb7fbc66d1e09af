"""The built-in configs: the quickstart, the papers' systems and the reproduction specs.

They have one source, the top-level ``configs/`` directory of the repository. A checkout
(or an editable install) reads it there; a built wheel or sdist carries the same files as
``rnmt/configs/`` (``setup.py`` copies them in at build time). A config is named by a
path, or by its name under ``configs/`` or ``configs/papers/`` without ``.yaml``:
``quickstart``, ``atr/rnnsearch-atr``, ``papers/dtmt/dtmt4``.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import List, Optional

from rnmt.errors import UserError

_PACKAGE = Path(__file__).resolve().parent


def configs_dir() -> Path:
    """Where the built-in configs are: inside the installed package, else the checkout's."""
    packaged = _PACKAGE / "configs"
    return packaged if packaged.is_dir() else _PACKAGE.parent / "configs"


def builtin_configs() -> List[str]:
    """Every built-in config by the short name ``resolve_config`` accepts."""
    root = configs_dir()
    names = []
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root).with_suffix("").as_posix()
        if rel.startswith("reproduce/"):
            continue  # reproduction specs are not training configs
        names.append(rel[len("papers/"):] if rel.startswith("papers/") else rel)
    return names


def _builtin(name: str) -> Optional[Path]:
    stem = name[len("configs/"):] if name.startswith("configs/") else name
    stem = stem[:-len(".yaml")] if stem.endswith(".yaml") else stem
    root = configs_dir()
    for candidate in (root / f"{stem}.yaml", root / "papers" / f"{stem}.yaml"):
        if candidate.is_file():
            return candidate
    return None


def resolve_config(spec: str | Path) -> Path:
    """A config file: ``spec`` itself when it is a file, else the built-in config it names.

    A path that exists always wins, so a user's ``atr/rnnsearch-atr.yaml`` in the current
    directory is read rather than the built-in one.
    """
    path = Path(spec)
    if path.is_file():
        return path
    found = _builtin(str(spec).replace("\\", "/"))
    if found is not None:
        return found
    close = difflib.get_close_matches(str(spec), builtin_configs(), n=1, cutoff=0.6)
    hint = f"; did you mean the built-in config '{close[0]}'?" if close else \
        " (nor a built-in config such as 'quickstart' or 'atr/rnnsearch-atr')"
    raise UserError(f"config file not found: {spec}{hint}")
