"""A line longer than `MAX_LINE_BYTES` is one error naming its file and line, in every
reader (whole files, standard input, chunked streams), before it is read whole."""

from __future__ import annotations

import io
import sys

import pytest

from rnmt.data import iter_lines, read_lines, reading
from rnmt.data.streaming import LineSource
from rnmt.errors import UserError


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(reading, "MAX_LINE_BYTES", 10)


def test_lines_up_to_the_limit_read_and_a_longer_one_is_named(tmp_path, small_limit):
    path = tmp_path / "in.txt"
    path.write_bytes(b"0123456789\n0123456789\r\nshort\n01234567890\nnever\n")  # line 4: 11 bytes
    lines = iter_lines(path)
    assert [next(lines) for _ in range(3)] == ["0123456789", "0123456789", "short"]
    with pytest.raises(UserError, match=r"in.txt: line 4 is longer than 10 bytes; is it text"):
        next(lines)
    path.write_bytes(b"0123456789")  # at the limit, no terminator
    assert list(iter_lines(path)) == ["0123456789"]


def test_standard_input_names_the_line(monkeypatch, small_limit):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok\n" + b"x" * 50)))
    with pytest.raises(UserError, match=r"<stdin>: line 2 is longer than 10 bytes"):
        read_lines(None)


@pytest.mark.parametrize("data, line", [
    (b"ok\n" + b"x" * 100, 2),  # no line break at all after line 1: refused before the end
    (b"a\nb\n" + b"y" * 11 + b"\nc\n", 3),  # a too-long line ending inside one read
])
def test_a_stream_names_the_line(tmp_path, monkeypatch, small_limit, data, line):
    from rnmt.data import streaming

    monkeypatch.setattr(streaming, "READ_SIZE", 4)  # many reads per line
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    source = LineSource(path)
    with pytest.raises(UserError, match=rf"in.txt: line {line} is longer than 10 bytes"):
        list(source.chunks(1))
    source.close()


def test_a_stream_takes_a_line_at_the_limit_with_its_terminator(tmp_path, monkeypatch, small_limit):
    from rnmt.data import streaming

    monkeypatch.setattr(streaming, "READ_SIZE", 4)
    path = tmp_path / "in.txt"
    path.write_bytes(b"0123456789\r\n0123456789\n0123456789\r")
    source = LineSource(path)
    assert [line for chunk in source.chunks(5) for line in chunk] == ["0123456789"] * 3
    source.close()


def test_a_stream_joins_a_line_read_in_many_pieces(tmp_path, monkeypatch):
    from rnmt.data import streaming

    monkeypatch.setattr(streaming, "READ_SIZE", 3)
    path = tmp_path / "in.txt"
    path.write_bytes(b"uno dos tres cuatro\n\ncinco seis\nsiete")
    source = LineSource(path)
    assert [line for chunk in source.chunks(2) for line in chunk] == ["uno dos tres cuatro", "", "cinco seis", "siete"]
    source.close()


def test_evaluation_files_name_the_line(tmp_path, small_limit):
    from rnmt.evaluation.textfiles import read_lines as read_scored

    path = tmp_path / "hyp.txt"
    path.write_bytes(b"0123456789\r\nshort\n0123456789")  # each line at the limit
    assert read_scored(path) == ["0123456789", "short", "0123456789"]
    path.write_bytes(b"ok\n" + b"x" * 11)
    with pytest.raises(UserError, match=r"hyp.txt: line 2 is longer than 10 bytes"):
        read_scored(path)
