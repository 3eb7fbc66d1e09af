"""Writing an export directory atomically: everything goes into a temporary sibling of
``--out``, which replaces ``--out`` only when complete, so a failed or interrupted export
leaves ``--out`` as it was and no half-written directory anywhere."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from rnmt.errors import UserError, write_failure
from rnmt.io.directories import replace_directory


def check_target(out: Path, force: bool) -> None:
    """Refuse an ``--out`` that is a file, or a non-empty directory without ``force``."""
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise UserError(f"{out}: exists and is not a directory (--out names the export directory)")
        if any(out.iterdir()) and not force:
            raise UserError(f"{out}: directory is not empty (give --force to replace it)")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"{parent}: no such directory (the parent of --out)")


@contextlib.contextmanager
def staged(out: Path, force: bool) -> Iterator[Path]:
    """A temporary directory beside ``out`` to write into; on success it becomes ``out``
    (an existing ``out`` is replaced: only an empty one, or any with ``force``)."""
    check_target(out, force)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    except OSError as exc:
        what, advice = write_failure(exc)
        raise UserError(f"{out.parent}: {what} while creating the export: {advice}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        replace_directory(tmp, out, "moving the export into place")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
