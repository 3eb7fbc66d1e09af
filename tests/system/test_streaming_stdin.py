"""Input from standard input redirected from a file is counted from its current position."""

from __future__ import annotations

import subprocess
import sys


def test_stdin_from_a_file_is_counted_from_its_current_position(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\nb\nc\n", encoding="utf-8")
    code = ("from rnmt.data.streaming import LineSource; s = LineSource(); "
            "print(s.is_regular_file, s.remaining_lines(), list(s.chunks(10)))")
    with open(path, "rb") as fh:
        fh.seek(2)  # as `(read first; rnmt translate) < in.txt` leaves it
        result = subprocess.run([sys.executable, "-c", code], stdin=fh, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "True 2 [['b', 'c']]", result.stderr
