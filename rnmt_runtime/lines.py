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
import stat
import sys
import tempfile
from typing import BinaryIO, Iterator, List, Optional, TextIO

from rnmt_runtime.errors import ExportError

READ_SIZE = 1 << 16
MAX_LINE_BYTES = 1 << 24  # a longer "line" is not text with one segment per line
_BOM = b"\xef\xbb\xbf"


class LineSource:
    """An input file or standard input (``path`` None or ``-``), read by chunks of lines.

    ``rnmt translate`` and ``rnmt score`` read with this class too
    (`rnmt.data.streaming.LineSource`), phrasing its errors as rnmt's other readers do
    through the hooks `_open_error`, `_too_long` and `_not_utf8`, and taking the line limit
    and read size from rnmt's settings (`max_line_bytes`, `read_size`)."""

    def __init__(self, path: Optional[str] = None) -> None:
        self.stdin = path is None or str(path) == "-"
        self.name = "<stdin>" if self.stdin else str(path)
        self._file: Optional[BinaryIO] = None
        if not self.stdin:
            try:
                self._file = open(str(path), "rb")
            except OSError as exc:
                raise self._open_error(str(path), exc) from None
        self.fd = sys.stdin.fileno() if self._file is None else self._file.fileno()
        self.lines_read = 0

    # -- what subclasses phrase or set differently ---------------------------------------

    @property
    def max_line_bytes(self) -> int:
        """The longest line (bytes, its terminator excluded): a longer one is an error."""
        return MAX_LINE_BYTES

    @property
    def read_size(self) -> int:
        return READ_SIZE

    def _open_error(self, path: str, exc: OSError) -> Exception:
        return ExportError(f"{path}: cannot read the input: {exc.strerror}")

    def _too_long(self, lineno: int) -> Exception:
        return ExportError(f"{self.name}: line {lineno} is longer than {self.max_line_bytes:,} bytes; is it text "
                           f"with one segment per line?")

    def _not_utf8(self, lineno: int, byte: int) -> Exception:
        return ExportError(f"{self.name}: line {lineno} is not valid UTF-8 (byte {byte})")

    # -- reading -------------------------------------------------------------------------

    @property
    def is_regular_file(self) -> bool:
        return stat.S_ISREG(os.fstat(self.fd).st_mode)

    @property
    def is_terminal(self) -> bool:
        return os.isatty(self.fd)

    def remaining_lines(self) -> Optional[int]:
        """Lines from the current position to the end of a regular file (None otherwise),
        counted without moving the position."""
        if not self.is_regular_file:
            return None
        start = os.lseek(self.fd, 0, os.SEEK_CUR)
        n, last = 0, b"\n"
        try:
            while block := os.read(self.fd, 1 << 20):
                n += block.count(b"\n")
                last = block[-1:]
        finally:
            os.lseek(self.fd, start, os.SEEK_SET)
        return n + (last != b"\n")

    def chunks(self, max_lines: int) -> Iterator[List[str]]:
        """Chunks of at most ``max_lines`` decoded lines, in order; empty lines included. A
        line longer than `max_line_bytes` is an error before it is read whole."""
        limit = self.max_line_bytes
        queue: List[bytes] = []  # complete raw lines not yet handed out
        pending: List[bytes] = []  # the reads holding the start of a line whose end is not read yet
        pending_bytes = 0
        eof = False
        while True:
            if len(queue) >= max_lines or (queue and (eof or not _waiting(self.fd))):
                chunk, queue = queue[:max_lines], queue[max_lines:]
                yield self._decode(chunk)
                continue
            if eof:
                if pending:  # a last line without a terminator
                    last = b"".join(pending)
                    if _content_length(last) > limit:
                        raise self._too_long(self.lines_read + len(queue) + 1)
                    queue.append(last)
                    pending, pending_bytes = [], 0
                    continue
                return
            data = os.read(self.fd, self.read_size)
            if not data:
                eof = True
                continue
            if b"\n" not in data:  # a long line: keep its pieces, joined once it ends (not at every read)
                pending.append(data)
                pending_bytes += len(data)
                if pending_bytes > limit + 1:  # + 1: a "\r" may end it
                    raise self._too_long(self.lines_read + len(queue) + 1)
                continue
            *complete, rest = (b"".join(pending) + data).split(b"\n")
            for k, line in enumerate(complete):
                if _content_length(line) > limit:
                    raise self._too_long(self.lines_read + len(queue) + k + 1)
            queue.extend(complete)
            pending, pending_bytes = ([rest], len(rest)) if rest else ([], 0)

    def _decode(self, raw_lines: List[bytes]) -> List[str]:
        lines = []
        for raw in raw_lines:
            self.lines_read += 1
            if self.lines_read == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self._not_utf8(self.lines_read, exc.start + 1) from None
            lines.append(text[:-1] if text.endswith("\r") else text)
        return lines

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _content_length(raw: bytes) -> int:
    """The bytes of a raw line without its terminator (``\n``, ``\r\n`` or a final ``\r``)."""
    n = len(raw) - raw.endswith(b"\n")
    return n - (raw[n - 1:n] == b"\r")


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
