"""Training curves: TensorBoard event files (train.tensorboard) and `rnmt plot`."""

from __future__ import annotations

import json

import pytest

from rnmt.analysis.curves import curves_figure, read_curves
from rnmt.cli import main
from tests.support import tiny_config_tree


def records(run):
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def tb_run(tmp_path_factory, tiny_corpus):
    """A second tiny run (another unit), with TensorBoard events."""
    from rnmt.config import config_from_dict
    from rnmt.training.trainer import Trainer

    out = tmp_path_factory.mktemp("tb_run")
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"]["cell"] = "atr"
    tree["train"]["tensorboard"] = True
    Trainer(config_from_dict(tree), out, log=lambda *_: None).run()
    return out


def test_tensorboard_events_match_the_log(tb_run):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tb_run / "tensorboard"))
    events.Reload()
    log = records(tb_run)
    for tag, key in (("train/loss", "loss"), ("train/lr", "lr"), ("train/tokens_per_s", "tokens_per_s"),
                     ("dev/bleu", "dev_bleu"), ("dev/chrf", "dev_chrf"), ("dev/loss", "dev_loss")):
        want = [(r["step"], r[key]) for r in log if key in r]
        got = [(e.step, e.value) for e in events.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in want] and len(want) >= 2, tag
        assert [v for _, v in got] == pytest.approx([v for _, v in want], rel=1e-5), tag


def test_plot_draws_two_runs_against_updates_and_minutes(tiny_run, tb_run, tmp_path, capsys):
    out = tmp_path / "curves.png"
    assert main(["plot", str(tiny_run), str(tb_run), "--label", "GRU", "--label", "ATR", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "GRU: 6 updates" in capsys.readouterr().out

    runs = [read_curves(tiny_run, "GRU"), read_curves(tb_run, "ATR")]
    fig = curves_figure(runs)
    (loss_steps, loss_minutes), (bleu_steps, bleu_minutes) = fig.axes[0:2], fig.axes[2:4]
    for axis in fig.axes:
        assert len(axis.get_lines()) == 2  # one line per run
    for k, run in enumerate((tiny_run, tb_run)):
        log = records(run)
        train = [r for r in log if "loss" in r]
        dev = [r for r in log if "dev_bleu" in r]
        assert list(loss_steps.get_lines()[k].get_xdata()) == [r["step"] for r in train]
        assert list(loss_steps.get_lines()[k].get_ydata()) == pytest.approx([r["loss"] for r in train])
        assert list(loss_minutes.get_lines()[k].get_xdata()) == pytest.approx(
            [r["train_seconds"] / 60 for r in train])
        assert list(bleu_steps.get_lines()[k].get_ydata()) == pytest.approx([r["dev_bleu"] for r in dev])
        assert list(bleu_minutes.get_lines()[k].get_xdata()) == pytest.approx(
            [r["train_seconds"] / 60 for r in dev])


def test_older_logs_and_resumed_steps(tmp_path):
    log = tmp_path / "log.jsonl"
    lines = [{"step": 1, "loss": 5.0, "train_seconds": 60}, {"step": 2, "loss": 4.0, "train_seconds": 120},
             {"step": 2, "dev_bleu": 1.5, "dev_loss": 4.1},  # no train_seconds: before this version
             {"step": 2, "loss": 3.9, "train_seconds": 130}]  # a resume repeated step 2: the later wins
    log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    c = read_curves(log)
    assert c.steps == [1, 2] and c.loss == [5.0, 3.9] and c.dev_minutes == [130 / 60] and c.dev_bleu == [1.5]


def test_a_line_cut_by_a_kill_is_skipped_and_counted(tmp_path, capsys):
    from rnmt.cli import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").write_text(
        json.dumps({"step": 1, "loss": 5.0, "train_seconds": 60}) + "\n" + '{"step": 2, "lo'  # killed here
        + json.dumps({"step": 2, "loss": 4.0, "train_seconds": 100}) + "\n"  # the resumed run appends
        + json.dumps({"step": 3, "loss": 3.5, "train_seconds": 150}) + "\n")
    c = read_curves(run)
    assert c.steps == [1, 3] and c.skipped_lines == 1
    assert main(["plot", str(run), "--out", str(tmp_path / "c.png")]) == 0
    assert "run: 3 updates in 2.5 min (1 lines skipped: not records, e.g. cut by a kill)" in capsys.readouterr().out

