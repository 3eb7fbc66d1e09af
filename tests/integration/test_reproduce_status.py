"""`rnmt reproduce PAPER --status`: where each run of a table stands, read from its files."""

import json

from rnmt.cli import main
from rnmt.reproduce.spec import load_paper
from rnmt.reproduce.status import (
    cost_line,
    earliest_stop,
    recent_seconds_per_update,
    reproduction_status,
    status_table,
    to_go_line,
)
from rnmt.training.run_log import read_run_log


def write_log(path, rows, tail=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail, encoding="utf-8")


def train_row(step, seconds, lr=0.002, epoch=0):
    return {"step": step, "epoch": epoch, "loss": 3.0, "lr": lr, "train_seconds": seconds}


def dev_row(step, bleu, decays=0):
    return {"step": step, "dev_bleu": bleu, "dev_loss": 2.0, "plateau_decays": decays}


def test_a_resumed_run_logs_again_from_its_checkpoint_and_a_cut_line_is_skipped(tmp_path):
    log = tmp_path / "log.jsonl"
    # killed at 1,100 after the checkpoint at 1,000; resumed from 1,000; the kill cut a line
    write_log(log, [train_row(950, 95.0), train_row(1000, 100.0), dev_row(1000, 5.0), train_row(1050, 105.0),
                    train_row(1100, 110.0), train_row(1050, 300.0), train_row(1100, 305.0)], tail='{"step": 11')
    run_log = read_run_log(log)
    train, dev = run_log.train, run_log.dev
    assert [r["step"] for r in train] == [950, 1000, 1050, 1100]
    assert [r["train_seconds"] for r in train] == [95.0, 100.0, 300.0, 305.0]
    assert [r["step"] for r in dev] == [1000]


def test_recent_time_per_update_is_a_median_so_a_pause_does_not_count():
    rows = [train_row(50 * i, 100.0 * i) for i in range(1, 8)]  # 2 s per update
    rows[4]["train_seconds"] += 3600  # an hour paused under SIGSTOP inside one interval
    for r in rows[5:]:
        r["train_seconds"] += 3600
    assert recent_seconds_per_update(rows) == 2.0
    assert recent_seconds_per_update(rows[:1]) is None
    rows[-1]["train_seconds"] += 50  # the last interval slower: the last one alone says so, all of them do not
    assert recent_seconds_per_update(rows, intervals=1) == 3.0 and recent_seconds_per_update(rows, intervals=0) == 2.0


def test_runs_are_finished_in_progress_or_not_started(tmp_path):
    spec = load_paper("dtmt")
    results = tmp_path / "dtmt-converged"
    results.mkdir()
    (results / "shallow-rnmt.seed1.json").write_text(json.dumps(
        {"steps": 14000, "epochs": 21.44, "checkpoint_step": 12000, "best_dev_bleu": 28.5, "plateau_decays": 5,
         "stop_reason": "early_stopping", "test_bleu": 35.18, "train_minutes": 747.0,
         "seconds_per_update": 3.2}), encoding="utf-8")
    write_log(results / "runs" / "dtmt4.seed1" / "log.jsonl",
              [train_row(500, 1000.0), dev_row(500, 2.0), train_row(1000, 2000.0, epoch=1), dev_row(1000, 5.4),
               train_row(1500, 3000.0, lr=0.001, epoch=2), dev_row(1500, 5.1, decays=1), dev_row(2000, 5.4, decays=1)])
    (results / "shallow-rnmt.seed2.json").write_text("[]", encoding="utf-8")  # not a record: read the log
    write_log(results / "runs" / "shallow-rnmt.seed2" / "log.jsonl", [train_row(50, 100.0)])
    rows = {r.name: r for r in reproduction_status(spec, results, ["shallow-rnmt", "dtmt4"], [1, 2])}
    assert set(rows) == {"shallow-rnmt.seed1", "shallow-rnmt.seed2", "dtmt4.seed1", "dtmt4.seed2"}
    done = rows["shallow-rnmt.seed1"]
    assert (done.state, done.steps, done.best_step, done.stop_reason, done.test_bleu) == \
        ("finished", 14000, 12000, "early_stopping", 35.18)
    assert done.seconds_per_update == 3.2  # no log beside it: the record's own figure
    going = rows["dtmt4.seed1"]
    assert going.state == "in progress"
    # the first of two equal bests counts, as early stopping counts improvements
    assert (going.steps, going.best_dev_bleu, going.best_step, going.since_best) == (2000, 5.4, 1000, 2)
    assert (going.plateau_decays, going.lr, going.epoch, going.seconds_per_update) == (1, 0.001, 2, 2.0)
    assert rows["dtmt4.seed2"].state == "not started"
    assert (rows["shallow-rnmt.seed2"].state, rows["shallow-rnmt.seed2"].steps) == ("in progress", 50)
    table = "\n".join(status_table(list(rows.values()), patience=4))
    assert "| dtmt4.seed1 | in progress | 2,000 | 2 | 5.40 (1,000) | 2 of 4 | 1 | 1.00e-03 | 2.00 | 0.8 |" in table
    assert "| shallow-rnmt.seed1 | finished (early_stopping), test BLEU 35.18 | 14,000 | 21.44 | 28.50 (12,000) |" \
        in table
    # 14,000 updates at 3.2 s and 2,000 at 2.0 s; the 50 of a run with one logging line have no rate
    assert cost_line(list(rows.values())) == ("1 of 4 runs finished; 16,050 updates, 13.6 h of one core at each run's "
                                              "median s/update (13.3 training h logged, pauses and shared cores "
                                              "included)")
    # dtmt4.seed1: best at 1,000, two validations since (1,500 and 2,000): under patience 4 the
    # earliest stop is the validation at 3,000, unless the update limit comes first
    assert earliest_stop(going, patience=4, validate_every=500, cap=None) == 3000
    assert earliest_stop(going, patience=4, validate_every=500, cap=2500) == 2500
    assert earliest_stop(done, patience=4, validate_every=500, cap=None) is None  # finished
    assert earliest_stop(rows["shallow-rnmt.seed2"], 4, 500, None) is None  # no validation yet
    assert to_go_line(list(rows.values()), patience=4, validate_every=500, cap=None) == (
        "to go, at the least: 1,000 updates for the 1 run(s) in progress before early stopping can end them "
        "(0.6 h of one core at their recent s/update; a new best moves a run's earliest stop to 2,000 updates "
        "after it), and 1 run(s) not started")


def test_the_command_prints_the_table_with_the_settings_the_table_was_started_with(tmp_path, capsys):
    results = tmp_path / "dtmt-converged"
    results.mkdir()
    (results / "settings.json").write_text(json.dumps({"seeds": [3], "patience": 6}), encoding="utf-8")
    write_log(results / "runs" / "dtmt4" / "log.jsonl", [train_row(500, 1000.0), dev_row(500, 2.0)])
    assert main(["reproduce", "dtmt", "--converge", "--status", "--systems", "dtmt4", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| dtmt4 | in progress | 500 |" in out and "| 0 of 6 |" in out  # one seed: the run has no suffix
    assert "| shallow-rnmt | not started |" in out  # the baseline always belongs to the table
    assert "to go" not in out  # settings without validate_every: no estimate
    (results / "settings.json").write_text(json.dumps({"seeds": [3], "patience": 6, "validate_every": 500}))
    assert main(["reproduce", "dtmt", "--converge", "--status", "--systems", "dtmt4", "--out", str(tmp_path)]) == 0
    # the best at 500 and nothing after it: stopping can come at 500 + 6 x 500
    assert "to go, at the least: 3,000 updates for the 1 run(s) in progress" in capsys.readouterr().out
    assert not (tmp_path / "dtmt").exists()  # nothing written


def test_a_finished_run_whose_run_directory_is_gone_reads_the_committed_log_copy(tmp_path):
    spec = load_paper("dtmt")
    results = tmp_path / "dtmt-converged"
    results.mkdir()
    (results / "shallow-rnmt.seed1.json").write_text(json.dumps(
        {"steps": 150, "checkpoint_step": 100, "stop_reason": "early_stopping", "seconds_per_update": 3.2}),
        encoding="utf-8")
    # runs/ was not committed; logs/ holds the copy made when the run finished
    write_log(results / "logs" / "shallow-rnmt.seed1.log.jsonl",
              [train_row(50, 100.0), train_row(100, 200.0), train_row(150, 300.0)])
    rows = {r.name: r for r in reproduction_status(spec, results, ["shallow-rnmt"], [1, 2])}
    assert rows["shallow-rnmt.seed1"].seconds_per_update == 2.0


def test_an_unreadable_log_is_a_row_not_an_error(tmp_path):
    results = tmp_path / "dtmt-converged"
    write_log(results / "runs" / "dtmt4.seed1" / "log.jsonl", [], tail="not a log\n")
    rows = {r.name: r for r in reproduction_status(load_paper("dtmt"), results, ["dtmt4"], [1, 2])}
    assert rows["dtmt4.seed1"].state.startswith("log unreadable (") and "not a training log record" in \
        rows["dtmt4.seed1"].state
    assert rows["dtmt4.seed2"].state == "not started"



def test_a_run_with_a_lock_file_says_whether_a_process_trains_it_now(tmp_path, monkeypatch):
    import errno

    from rnmt.training import run_lock

    results = tmp_path / "dtmt-converged"
    for seed in (1, 2):
        write_log(results / "runs" / f"dtmt4.seed{seed}" / "log.jsonl", [train_row(50, 100.0)])
    (results / "runs" / "dtmt4.seed1" / run_lock.LOCK_FILE).write_text("4242\n")  # left by a stopped trainer
    rows = {r.name: r for r in reproduction_status(load_paper("dtmt"), results, ["dtmt4"], [1, 2])}
    assert rows["dtmt4.seed1"].state == "in progress, stopped"
    assert rows["dtmt4.seed2"].state == "in progress"  # no lock file: started before locks, nothing to ask

    def busy(fd, op):
        raise BlockingIOError(errno.EWOULDBLOCK, "busy")

    monkeypatch.setattr(run_lock.fcntl, "flock", busy)  # as when the trainer holds it
    rows = {r.name: r for r in reproduction_status(load_paper("dtmt"), results, ["dtmt4"], [1, 2])}
    assert rows["dtmt4.seed1"].state == "in progress, training now (pid 4242)"


def test_all_converge_continues_a_started_table_before_starting_another(tmp_path):
    from rnmt.commands.reproduce import _converged_papers
    from rnmt.reproduce.spec import PAPERS

    assert _converged_papers(PAPERS, tmp_path, [1, 2]) == ("atr", "cseq2seq", "dtmt")  # the survey has none
    write_log(tmp_path / "cseq2seq-converged" / "runs" / "rnnsearch.seed2" / "log.jsonl", [train_row(50, 100.0)])
    assert _converged_papers(PAPERS, tmp_path, [1, 2]) == ("cseq2seq", "atr", "dtmt")


def test_a_run_continuing_under_a_raised_patience_is_read_from_its_log(tmp_path):
    spec = load_paper("dtmt")
    results = tmp_path / "dtmt-converged"
    results.mkdir()
    curve = [{"step": 500, "dev_bleu": 5.0}, {"step": 1000, "dev_bleu": 4.0}]  # one validation since the best
    (results / "shallow-rnmt.seed1.json").write_text(json.dumps(
        {"steps": 1000, "stop_reason": "early_stopping", "validations": curve, "test_bleu": 9.0}), encoding="utf-8")
    run_dir = results / "runs" / "shallow-rnmt.seed1"
    write_log(run_dir / "log.jsonl", [train_row(1000, 100.0), train_row(1100, 110.0), dev_row(1000, 4.0)])
    rows = {r.name: r for r in reproduction_status(spec, results, ["shallow-rnmt"], [1, 2], patience=4)}
    assert rows["shallow-rnmt.seed1"].state == "finished"  # no checkpoint here to continue from
    (run_dir / "train_state.pt").write_bytes(b"")
    rows = {r.name: r for r in reproduction_status(spec, results, ["shallow-rnmt"], [1, 2], patience=4)}
    assert rows["shallow-rnmt.seed1"].state == "in progress" and rows["shallow-rnmt.seed1"].steps == 1100
    rows = {r.name: r for r in reproduction_status(spec, results, ["shallow-rnmt"], [1, 2], patience=1)}
    assert rows["shallow-rnmt.seed1"].state == "finished"  # under patience 1 it had stopped for good
