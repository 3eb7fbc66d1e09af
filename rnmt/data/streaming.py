"""Reading translation input in chunks of lines, as it arrives.

A file is read in chunks of ``max_lines`` lines, so memory stays bounded whatever its
length. A pipe or a terminal is answered as it is written: a chunk ends as soon as no more
input is waiting, so a line written into an open pipe is translated before the next one
comes, while a pipe fed faster than it is translated still gives full chunks. Lines are
split and decoded as `rnmt.data.reading` does (``\\n`` only, strict UTF-8, errors naming
the line).

The reading itself is the torch-free runtime's (`rnmt_runtime.lines.LineSource`), which
``rnmt translate --model EXPORT_DIR`` uses; this class phrases its errors as rnmt's other
readers do and takes their line limit (`rnmt.data.reading.MAX_LINE_BYTES`).
"""

from __future__ import annotations

from typing import Optional

from rnmt.data import reading
from rnmt.data.reading import PathLike, line_too_long, not_utf8, open_error
from rnmt_runtime.lines import LineSource as RuntimeLineSource

READ_SIZE = 1 << 16


class LineSource(RuntimeLineSource):
    """An input file or standard input (``path`` None or ``-``), read by chunks of lines."""

    def __init__(self, path: Optional[PathLike] = None) -> None:
        super().__init__(None if path is None else str(path))

    @property
    def max_line_bytes(self) -> int:
        return reading.MAX_LINE_BYTES

    @property
    def read_size(self) -> int:
        return READ_SIZE

    def _open_error(self, path: str, exc: OSError) -> Exception:
        return open_error(path, exc)

    def _too_long(self, lineno: int) -> Exception:
        return line_too_long(self.name, lineno)

    def _not_utf8(self, lineno: int, byte: int) -> Exception:
        return not_utf8(self.name, lineno, byte)
