"""`rnmt plot` as a user runs it: a bad log is one `error:` line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rnmt.analysis.curves import read_curves
from rnmt.errors import UserError
from tests.support import REPO


def test_plot_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "log.jsonl").write_text('step,loss\n1,2.0\n')  # not a log this toolkit wrote
    with pytest.raises(UserError, match="log.jsonl:1: not a training log record"):
        read_curves(bad)
    result = subprocess.run([sys.executable, "-m", "rnmt", "plot", str(tmp_path / "missing"), "--out",
                             str(tmp_path / "c.png")], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert "no such training log" in result.stderr
