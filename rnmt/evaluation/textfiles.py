"""Reading the line-aligned text files that evaluation compares.

Lines are read the way the ``sacrebleu`` command line reads them (split on ``\\n`` only,
trailing whitespace stripped) so that a score computed here matches the console script on
the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Sized

from rnmt.data import reading
from rnmt.errors import UserError


def read_lines(path: str | Path) -> List[str]:
    """Return the lines of a UTF-8 text file without trailing whitespace.

    Raises `UserError` naming the file if it is missing, not valid UTF-8 (with the line of
    the first bad byte) or has a line over ``MAX_LINE_BYTES`` (the bound every reader keeps:
    a file without line breaks would otherwise reach the metric as one huge segment).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a text file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    _check_line_lengths(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line_no}: not valid UTF-8 (byte offset {exc.start})") from None
    # Only "\n" ends a line (as in sacrebleu, which opens files with newline="\n"); a final
    # line without a newline still counts, an empty file has no lines.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip() for line in lines]


def _check_line_lengths(data: bytes, path: Path) -> None:
    limit = reading.MAX_LINE_BYTES
    if len(data) <= limit:
        return  # no line can be longer than the file
    start, line_no = 0, 1
    while start <= len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start - data.endswith(b"\r", start, end) > limit:
            raise reading.line_too_long(str(path), line_no)
        start, line_no = end + 1, line_no + 1


def check_same_length(first: str | Path, first_lines: Sized,
                      other: str | Path, other_lines: Sized) -> None:
    """Raise `UserError` naming both files if their line counts differ."""
    if len(first_lines) != len(other_lines):
        raise UserError(
            f"{first} has {len(first_lines)} lines but {other} has {len(other_lines)}; "
            "files must be line-aligned")
