"""rnmt.training.run_log: one reading of log.jsonl for every consumer (status, records, curves)."""

import json

import pytest

from rnmt.errors import UserError
from rnmt.training.run_log import log_file, read_run_log


def write(path, rows):
    path.write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_records_are_split_by_kind_and_a_resume_replaces_the_steps_it_repeats(tmp_path):
    log = write(tmp_path / "log.jsonl", [
        {"step": 50, "loss": 4.0, "train_seconds": 5.0},
        {"step": 100, "loss": 3.5, "train_seconds": 10.0},
        {"step": 100, "dev_loss": 3.9, "dev_bleu": 1.0},
        {"step": 150, "loss": 3.2, "train_seconds": 15.0},
        {"step": 200, "loss": 3.0, "train_seconds": 20.0},  # lost: killed, resumed from 100
        {"step": 150, "skipped_nonfinite": 1},  # neither kind
        '{"step": 15',  # cut by the kill; the resumed run appends to the same line
        '{"step": 150, "loss": 3.3, "train_seconds": 16.0}\n',
        {"step": 200, "loss": 3.1, "train_seconds": 21.0},
        {"step": 200, "dev_loss": 3.1, "dev_bleu": 2.0},
    ])
    run = read_run_log(log)
    # the resumed 150 went into the cut line, so the discarded branch's 150 stands in for it
    assert [(r["step"], r["loss"]) for r in run.train] == [(50, 4.0), (100, 3.5), (150, 3.2), (200, 3.1)]
    assert [r["step"] for r in run.dev] == [100, 200] and run.last_dev["dev_bleu"] == 2.0
    assert run.skipped_lines == 1


def test_a_later_lower_step_drops_every_record_after_it(tmp_path):
    log = write(tmp_path / "log.jsonl", [{"step": s, "loss": 1.0, "train_seconds": s} for s in (50, 100, 150)]
                + [{"step": 100, "loss": 0.5, "train_seconds": 300}])
    assert [(r["step"], r["loss"]) for r in read_run_log(log).train] == [(50, 1.0), (100, 0.5)]


def test_a_file_without_records_and_a_missing_log_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match=r"other\.txt:2: not a training log record"):
        read_run_log(write(tmp_path / "other.txt", ["\n", "hello\n", '{"step": true}\n']))
    with pytest.raises(UserError, match="no such training log"):
        log_file(tmp_path / "absent")
    (tmp_path / "run").mkdir()
    write(tmp_path / "run" / "log.jsonl", [{"step": 1, "loss": 1.0}])
    assert log_file(tmp_path / "run") == tmp_path / "run" / "log.jsonl"
    assert read_run_log(tmp_path / "run" / "log.jsonl").train[0]["step"] == 1


def test_a_line_that_parses_but_is_not_a_record_is_skipped(tmp_path):
    # `rnmt plot` on such a log was a ValueError traceback (float('abc'))
    log = write(tmp_path / "log.jsonl", [
        {"step": 50, "loss": 4.0, "train_seconds": 5.0},
        {"step": 100, "loss": "abc", "train_seconds": 10.0},
        {"step": 100, "dev_loss": 3.9, "dev_bleu": [1.0]},
        {"step": 100, "loss": True},
        {"step": 150.0, "loss": 3.0},
        '[1, 2]\n', 'null\n',
        {"step": 150, "loss": 3.2, "train_seconds": 15.0, "epoch": None},
        {"step": 150, "dev_loss": 3.1, "dev_bleu": None, "dev_chrf": 30.0},
    ])
    run = read_run_log(log)
    assert [r["step"] for r in run.train] == [50, 150] and [r["step"] for r in run.dev] == [150]
    assert run.skipped_lines == 6
