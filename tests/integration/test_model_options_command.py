"""Typed architecture options: a config file with a bad option makes the command exit 2 with
one line."""

from __future__ import annotations

from rnmt.cli import main


def test_the_command_line_exits_2_with_one_line(tmp_path, capsys):
    code = main(["params", "configs/papers/atr/rnnsearch-atr.yaml", "--set", "model.options.context_awre=true"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "context_awre" in err[0] and "did you mean 'context_aware'" in err[0]
