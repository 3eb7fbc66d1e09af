"""Input read in chunks from a pipe: a chunk ends when no more input is waiting."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rnmt.data.streaming import LineSource


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd here")
def test_a_pipe_chunk_ends_when_no_more_input_is_waiting():
    read_fd, write_fd = os.pipe()
    source = LineSource(f"/dev/fd/{read_fd}")
    chunks = source.chunks(100)
    os.write(write_fd, b"uno\ndos\ntr")
    got: list = []
    reader = threading.Thread(target=lambda: got.append(next(chunks)))
    reader.start()
    reader.join(timeout=30)
    assert got == [["uno", "dos"]]  # answered while the pipe is still open, the partial line kept back
    os.write(write_fd, b"es\n")
    assert next(chunks) == ["tres"]
    os.write(write_fd, b"last")  # no terminator: ends with the input
    os.close(write_fd)
    assert list(chunks) == [["last"]]
    source.close()
    os.close(read_fd)
