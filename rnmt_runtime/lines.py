"""Input lines in chunks, and output written whole or not at all: ``rnmt translate``'s reading
and writing (`rnmt.data.streaming`, `rnmt.commands.translate_stream`), without rnmt.

A file is read ``max_lines`` lines at a time; a pipe is answered as it is written (a chunk
ends when no more input is waiting). Lines end at ``\\n`` (a ``\\r`` before it and a BOM at
the start are dropped) and must be UTF-8; a line that is not is an error naming it.
``--output FILE`` goes to a temporary file beside it that replaces FILE at the end.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import sys
import tempfile
from typing import BinaryIO, Iterator, List, Optional, TextIO

from rnmt_runtime.errors import ExportError

READ_SIZE = 1 << 16
MAX_LINE_BYTES = 1 << 24  # a longer "line" is not text with one segment per line
_BOM = b"\xef\xbb\xbf"


class LineSource:
    def __init__(self, path: Optional[str]) -> None:
        self.stdin = path is None or path == "-"
        self.name = "<stdin>" if self.stdin else str(path)
        self._file: Optional[BinaryIO] = None
        if not self.stdin:
            try:
                self._file = open(str(path), "rb")
            except OSError as exc:
                raise ExportError(f"{path}: cannot read the input: {exc.strerror}") from None
        self.fd = sys.stdin.fileno() if self._file is None else self._file.fileno()
        self.lines_read = 0

    def chunks(self, max_lines: int) -> Iterator[List[str]]:
        queue: List[bytes] = []
        pending = b""
        eof = False
        while True:
            if len(queue) >= max_lines or (queue and (eof or not _waiting(self.fd))):
                chunk, queue = queue[:max_lines], queue[max_lines:]
                yield [self._decode(raw) for raw in chunk]
                continue
            if eof:
                if pending:
                    queue.append(pending)
                    pending = b""
                    continue
                return
            data = os.read(self.fd, READ_SIZE)
            if not data:
                eof = True
                continue
            *complete, pending = (pending + data).split(b"\n")
            if len(pending) > MAX_LINE_BYTES + 1 or any(len(line) > MAX_LINE_BYTES + 1 for line in complete):
                raise ExportError(f"{self.name}: line {self.lines_read + len(queue) + len(complete) + 1} is longer "
                                  f"than {MAX_LINE_BYTES:,} bytes; is it text with one segment per line?")
            queue.extend(complete)

    def _decode(self, raw: bytes) -> str:
        self.lines_read += 1
        if self.lines_read == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportError(f"{self.name}: line {self.lines_read} is not valid UTF-8 "
                              f"(byte {exc.start + 1})") from None
        return text[:-1] if text.endswith("\r") else text

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _waiting(fd: int) -> bool:
    try:
        ready, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(ready)


class OutputFile:
    """``--output FILE`` written whole or not at all: the translations go to a temporary file
    beside it, which replaces FILE only once the last line is written (`commit`). An
    interrupted or failed run (Ctrl-C, SIGTERM, an error) leaves FILE as it was, or absent,
    and removes the temporary (`discard`). Standard output, ``-`` and anything that is not a
    regular file (a pipe, /dev/null, a terminal) are written in place, chunk by chunk.

    ``rnmt translate`` uses this class too (`rnmt.commands.translate_stream.OutputFile`),
    phrasing its errors with rnmt's advice through `_error`."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.tmp: Optional[str] = None
        if not path or path == "-":
            self.stream: TextIO = sys.stdout
            return
        try:
            if os.path.exists(path) and not os.path.isfile(path):
                self.stream = open(path, "w", encoding="utf-8")
                return
            directory, name = os.path.split(os.path.abspath(path))
            fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            if os.path.isfile(path):
                shutil.copymode(path, self.tmp)  # the replaced file keeps its permissions
            self.stream = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            self._remove()
            raise self._error(exc, writing=False) from None

    def _error(self, exc: OSError, writing: bool) -> Exception:
        """The one-line error for a refused open (``writing`` False) or write of the output."""
        return ExportError(f"{self.path}: cannot write the translations: {exc.strerror}")

    @property
    def replaces(self) -> bool:
        """Whether the output goes to a temporary file that replaces ``path`` at the end."""
        return self.tmp is not None

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError as exc:
            if self.stream is sys.stdout or isinstance(exc, BrokenPipeError):
                raise
            raise self._error(exc, writing=True) from None

    def commit(self) -> None:
        if self.stream is sys.stdout:
            return
        try:
            self.stream.close()
            if self.tmp is not None:
                os.replace(self.tmp, self.path)  # type: ignore[arg-type]
                self.tmp = None
        except OSError as exc:
            self.discard()
            raise self._error(exc, writing=True) from None

    def discard(self) -> None:
        if self.stream is not sys.stdout:
            with contextlib.suppress(OSError):  # a failing write is reported by its caller
                self.stream.close()
        self._remove()

    def _remove(self) -> None:
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None
