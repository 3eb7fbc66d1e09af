"""`rnmt.training.side_by_side.worker_exit`: the exit code both kinds of worker process end with."""

from __future__ import annotations

from rnmt.errors import UserError
from rnmt.training.side_by_side import worker_exit


def test_a_worker_exits_0_its_own_code_or_2_with_one_line_for_a_user_error(capsys):
    assert worker_exit(lambda: None) == 0
    assert worker_exit(lambda: 143) == 143

    def fails():
        raise UserError("configs/x.yaml: no such file")

    assert worker_exit(fails) == 2
    assert capsys.readouterr().err == "error: configs/x.yaml: no such file\n"
