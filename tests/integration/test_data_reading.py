"""Reading and validating plain-text corpora."""

import pytest

from rnmt.data import read_lines, read_parallel
from rnmt.errors import UserError


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_parallel_pairs_are_read_in_order(tmp_path):
    src = write(tmp_path / "a.es", "uno\ndos\ntrés\n".encode())
    tgt = write(tmp_path / "a.en", b"one\ntwo\nthree\n")
    assert read_parallel(src, tgt) == (["uno", "dos", "trés"], ["one", "two", "three"], 0)


def test_unequal_line_counts_name_both_files_and_counts(tmp_path):
    src = write(tmp_path / "c.es", b"a\nb\nc\n")
    tgt = write(tmp_path / "c.en", b"a\nb\n")
    with pytest.raises(UserError) as err:
        read_parallel(src, tgt)
    msg = str(err.value)
    assert "c.es" in msg and "c.en" in msg and "3" in msg and "2" in msg
    assert "\n" not in msg


def test_missing_last_newline_still_counts_the_line(tmp_path):
    src = write(tmp_path / "s", b"a\nb")
    tgt = write(tmp_path / "t", b"x\ny\n")
    assert read_parallel(src, tgt)[:2] == (["a", "b"], ["x", "y"])


def test_invalid_utf8_names_file_and_line(tmp_path):
    src = write(tmp_path / "ok.txt", b"a\nb\nc\n")
    tgt = write(tmp_path / "bad.txt", b"a\nb\n\xff\xfe\n")
    with pytest.raises(UserError, match=r"bad\.txt: line 3 is not valid UTF-8"):
        read_parallel(src, tgt)


def test_missing_file_is_named(tmp_path):
    src = write(tmp_path / "here.txt", b"a\n")
    with pytest.raises(UserError, match="nowhere.txt"):
        read_parallel(src, tmp_path / "nowhere.txt")
    with pytest.raises(UserError, match="nowhere.txt"):
        read_lines(tmp_path / "nowhere.txt")


def test_blank_pairs_are_skipped_and_counted(tmp_path):
    src = write(tmp_path / "s", b"a\n\nc\n  \t\ne\n")
    tgt = write(tmp_path / "t", b"A\nB\n\nD\nE\n")
    src_lines, tgt_lines, n_empty = read_parallel(src, tgt)
    assert (src_lines, tgt_lines, n_empty) == (["a", "e"], ["A", "E"], 3)


def test_only_newline_splits_lines(tmp_path):
    # U+2028 and form feed are line breaks for str.splitlines, not for a corpus.
    src = write(tmp_path / "s", "a\u2028b\x0cc\r\nd\n".encode())
    tgt = write(tmp_path / "t", b"one\ntwo\n")
    assert read_parallel(src, tgt)[0] == ["a\u2028b\x0cc", "d"]


def test_translation_reader_keeps_empty_lines(tmp_path):
    path = write(tmp_path / "in.txt", "\ufeffhola\n\n  \nadiós\n".encode())
    assert read_lines(path) == ["hola", "", "  ", "adiós"]
