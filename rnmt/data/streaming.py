"""Reading translation input in chunks of lines, as it arrives.

A file is read in chunks of ``max_lines`` lines, so memory stays bounded whatever its
length. A pipe or a terminal is answered as it is written: a chunk ends as soon as no more
input is waiting, so a line written into an open pipe is translated before the next one
comes, while a pipe fed faster than it is translated still gives full chunks. Lines are
split and decoded as `rnmt.data.reading` does (``\\n`` only, strict UTF-8, errors naming
the line).

Whether more input is waiting is asked with ``select`` (POSIX); where it cannot answer for
a stream, the stream is read like a file.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from typing import BinaryIO, Iterator, List, Optional

from rnmt.data import reading
from rnmt.data.reading import PathLike, _decode, _open, content_length, line_too_long

READ_SIZE = 1 << 16


class LineSource:
    """An input file or standard input (``path`` None or ``-``), read by chunks of lines."""

    def __init__(self, path: Optional[PathLike] = None) -> None:
        self.stdin = path is None or str(path) == "-"
        self.name = "<stdin>" if self.stdin else str(path)
        self._file: Optional[BinaryIO] = None if self.stdin else _open(path)  # type: ignore[arg-type]
        self.fd = sys.stdin.fileno() if self._file is None else self._file.fileno()
        self.lines_read = 0

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
        """Chunks of at most ``max_lines`` decoded lines, in order; empty lines included."""
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
                    if content_length(last) > reading.MAX_LINE_BYTES:
                        raise line_too_long(self.name, self.lines_read + len(queue) + 1)
                    queue.append(last)
                    pending, pending_bytes = [], 0
                    continue
                return
            data = os.read(self.fd, READ_SIZE)
            if not data:
                eof = True
                continue
            if b"\n" not in data:  # a long line: keep its pieces, joined once it ends
                pending.append(data)
                pending_bytes += len(data)
                if pending_bytes > reading.MAX_LINE_BYTES + 1:  # + 1: a "\r" may end it
                    raise line_too_long(self.name, self.lines_read + len(queue) + 1)
                continue
            *complete, rest = (b"".join(pending) + data).split(b"\n")
            for k, line in enumerate(complete):
                if content_length(line) > reading.MAX_LINE_BYTES:
                    raise line_too_long(self.name, self.lines_read + len(queue) + k + 1)
            queue.extend(complete)
            pending, pending_bytes = ([rest], len(rest)) if rest else ([], 0)

    def _decode(self, raw_lines: List[bytes]) -> List[str]:
        first = self.lines_read + 1
        self.lines_read += len(raw_lines)
        return [_decode(raw, self.name, first + k) for k, raw in enumerate(raw_lines)]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _waiting(fd: int) -> bool:
    """Whether reading ``fd`` would return at once (always, for a regular file)."""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):  # no select for this kind of stream here: read on
        return True
