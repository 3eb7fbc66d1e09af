"""A finished directory moved into place: what `rnmt export` and its page write atomically."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rnmt.errors import UserError, write_failure


def replace_directory(tmp: Path, out: Path, during: str) -> None:
    """Move the finished directory ``tmp`` to ``out``; an existing ``out`` is renamed aside
    first (and back if the move fails) and removed after. A failure is one `UserError`
    naming ``out`` and what was being done (``during``). The export and the page use it."""
    old = None
    try:
        if out.exists():
            old = out.with_name(f".{out.name}.old.{os.getpid()}")
            os.rename(out, old)
        os.rename(tmp, out)
    except OSError as exc:
        if old is not None and not out.exists():
            os.rename(old, out)
        what, advice = write_failure(exc)
        raise UserError(f"{out}: {what} while {during}: {advice}") from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
