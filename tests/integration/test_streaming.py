"""Input read in chunks from files: every line in order, invalid UTF-8 named by its line."""

from __future__ import annotations

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
