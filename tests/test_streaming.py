"""Input read in chunks as it arrives: files in bounded pieces, pipes answered line by line."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rnmt.data import read_lines
from rnmt.data.streaming import LineSource
from rnmt.errors import UserError


def test_file_chunks_keep_every_line_in_order(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("uno\n\ndos\r\ntres\u2028más\ncuatro\n \nsiete".encode())
    source = LineSource(path)
    assert source.remaining_lines() == 7
    chunks = list(source.chunks(3))
    source.close()
    assert [len(c) for c in chunks] == [3, 3, 1]
    assert sum(chunks, []) == read_lines(path)


def test_invalid_utf8_is_named_by_its_line_in_a_later_chunk(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a\nb\nc\nd\n\xff\n")
    source = LineSource(path)
    with pytest.raises(UserError, match=r"bad.txt: line 5 is not valid UTF-8"):
        list(source.chunks(2))
    source.close()


def test_stdin_from_a_file_is_counted_from_its_current_position(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\nb\nc\n", encoding="utf-8")
    code = ("from rnmt.data.streaming import LineSource; s = LineSource(); "
            "print(s.is_regular_file, s.remaining_lines(), list(s.chunks(10)))")
    with open(path, "rb") as fh:
        fh.seek(2)  # as `(read first; rnmt translate) < in.txt` leaves it
        result = subprocess.run([sys.executable, "-c", code], stdin=fh, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "True 2 [['b', 'c']]", result.stderr


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
