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
    """Standard output (or ``-``, or anything not a regular file) written in place; a file
    written under a temporary name and renamed by `commit`, removed by `discard`."""

    def __init__(self, path: Optional[str]) -> None:
        self.path, self.tmp = path, None
        if not path or path == "-":
            self.stream: TextIO = sys.stdout
            return
        try:
            if os.path.exists(path) and not os.path.isfile(path):
                self.stream = open(path, "w", encoding="utf-8")
                return
            fd, self.tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                            dir=os.path.dirname(os.path.abspath(path)))
            self.stream = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            raise ExportError(f"{path}: cannot write the translations: {exc.strerror}") from None

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError as exc:
            if self.stream is sys.stdout or isinstance(exc, BrokenPipeError):
                raise
            raise ExportError(f"{self.path}: cannot write the translations: {exc.strerror}") from None

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
            raise ExportError(f"{self.path}: cannot write the translations: {exc.strerror}") from None

    def discard(self) -> None:
        if self.stream is not sys.stdout:
            with contextlib.suppress(OSError):
                self.stream.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None
