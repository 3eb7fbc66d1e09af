"""`rnmt translate --constraints` as a user runs it: a constraint file's mistakes exit 2 with
one line."""

from __future__ import annotations

from rnmt.cli import main
from tests.support import assert_one_line_error, run_rnmt

LINES = ["Y dijo Dios: Sea la luz.", "Y vio Dios que la luz era buena.", "", "Y llamó Dios á la luz Día"]


def test_constraints_file_mistakes_exit_2_with_one_line(tiny_run, tmp_path):
    src, cons = tmp_path / "in.es", tmp_path / "cons.en"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    cons.write_text("God\n\n", encoding="utf-8")
    assert_one_line_error(run_rnmt("translate", "--model", tiny_run, "--input", src, "--constraints", cons),
                          f"--constraints {cons} has 2 lines but the input {src} has 4")
    cons.write_text("God\t\n\n\n\n", encoding="utf-8")
    assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--constraints", str(cons)]) == 2
    assert_one_line_error(run_rnmt("translate", "--model", tiny_run, "--input", src, "--constraints", cons,
                                   "--sample"), "do not combine with --sample")
