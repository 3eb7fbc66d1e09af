"""Reading lines to translate from standard input: invalid UTF-8 is named by its line."""

import io
import sys

import pytest

from rnmt.data import read_lines
from rnmt.errors import UserError


def test_translation_reader_validates_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok\n\xc3\n")))
    with pytest.raises(UserError, match=r"<stdin>: line 2"):
        read_lines(None)
