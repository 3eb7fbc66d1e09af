"""`rnmt reproduce --jobs 2`: runs side by side in their own processes give the records of one."""

from __future__ import annotations

import json

import pytest

from rnmt.reproduce import reproduce_paper
from tests.support import MessageLog, tiny_reproduction_corpus, tiny_reproduction_settings


def test_side_by_side_jobs_give_the_records_of_one_process(tmp_path):
    """--jobs 2: each run in its own process, same records (and losses) as one after the other."""
    corpus = tiny_reproduction_corpus(tmp_path)
    one = reproduce_paper("cseq2seq", tiny_reproduction_settings(seeds=[1]), tmp_path / "one", str(corpus),
                          systems=["seq2seq"], log=MessageLog())
    log = MessageLog()
    two = reproduce_paper("cseq2seq", tiny_reproduction_settings(seeds=[1], jobs=2), tmp_path / "two", str(corpus),
                          systems=["seq2seq"], log=log)
    assert sum("started in its own process" in m for m in log) == 2
    assert (tmp_path / "two" / "cseq2seq" / "runs" / "seq2seq.log").is_file()
    for name in ("seq2seq", "rnnsearch"):
        a, b = one["systems"][name][0], two["systems"][name][0]
        assert (a["test_bleu"], a["steps"]) == (b["test_bleu"], b["steps"])
        one_losses, two_losses = ([json.loads(line).get("loss") for line in
                                   (tmp_path / d / "cseq2seq" / "runs" / name / "log.jsonl").read_text().splitlines()]
                                  for d in ("one", "two"))
        assert one_losses == two_losses and any(loss is not None for loss in one_losses)
    record = json.loads((tmp_path / "two" / "cseq2seq" / "rnnsearch.json").read_text())
    assert record["machine"]["jobs"] == 2


def _workers_of(root) -> list:
    """Pids of `rnmt.reproduce.worker` processes whose command line names ``root``."""
    from pathlib import Path

    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "rnmt.reproduce.worker" in cmd and str(root) in cmd:
            pids.append(int(proc.name))
    return pids


def test_sigterm_to_a_side_by_side_table_stops_its_workers_with_checkpoints(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.support import REPO

    corpus = tiny_reproduction_corpus(tmp_path)
    out = tmp_path / "out"
    parent = subprocess.Popen(
        [sys.executable, "-m", "rnmt", "reproduce", "cseq2seq", "--data", str(corpus), "--systems", "seq2seq",
         "--seeds", "1", "--jobs", "2", "--updates", "100000", "--dims", "8,16", "--vocab-size", "120",
         "--dev-sentences", "4", "--validate-every", "5", "--threads", "1", "--device", "cpu", "--out", str(out)],
        stderr=subprocess.PIPE, text=True, cwd=REPO)
    runs = out / "cseq2seq" / "runs"
    deadline = time.monotonic() + 300
    # both runs past a checkpoint (every validation, 5 updates)
    while not all((runs / name / "train_state.pt").is_file() for name in ("seq2seq", "rnnsearch")):
        assert parent.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    assert len(_workers_of(out)) == 2
    parent.send_signal(signal.SIGTERM)
    _, err = parent.communicate(timeout=120)
    assert parent.returncode == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("error: stopped by SIGTERM: every run in progress saved a checkpoint; "
                                            "run the same command again to continue (finished runs are kept)")
    assert _workers_of(out) == []  # none left training unseen
    for name in ("seq2seq", "rnnsearch"):
        assert "stopped by SIGTERM" in (runs / f"{name}.log").read_text(encoding="utf-8")


def test_a_second_command_on_a_table_in_work_is_refused(tmp_path):
    import subprocess
    import sys

    import pytest

    from rnmt.errors import UserError

    corpus = tiny_reproduction_corpus(tmp_path)
    table = tmp_path / "out" / "cseq2seq"
    table.mkdir(parents=True)
    # another process holds the table's lock, as a first `rnmt reproduce cseq2seq` would
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(table / '.train.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, str(os.getpid()).encode())\n"
        "print('held', flush=True); time.sleep(120)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=rf"{table}: another process \(pid {holder.pid}\) is training"):
            reproduce_paper("cseq2seq", tiny_reproduction_settings(seeds=[1]), tmp_path / "out", str(corpus),
                            systems=["seq2seq"], log=MessageLog())
        assert not (table / "runs" / "seq2seq").exists()  # refused before any run was planned
    finally:
        holder.kill()
        holder.wait()


def test_one_pool_serves_every_table_so_a_freed_core_starts_the_next_tables_run(tmp_path, monkeypatch):
    """`reproduce all --jobs 2`: a worker freed near the end of one table takes the next
    table's first run instead of idling until the table's last run ends (stand-in workers
    that sleep, in place of training)."""
    import sys
    import time
    from pathlib import Path

    from rnmt.reproduce import run as reproduce_run
    from rnmt.reproduce.system import Run

    seconds = {"a1": 2.0, "a2": 0.2, "b1": 0.2}
    monkeypatch.setattr(reproduce_run, "_worker_command", lambda paper, run, *rest: [
        sys.executable, "-c", f"import time; time.sleep({seconds[run.name]})"])
    finished = []

    def job(paper, name):
        return reproduce_run._Job(paper, Run(system=None, seed=1, name=name), "cmd", Path(tmp_path),
                                  lambda: finished.append((paper, name, time.monotonic())))

    log = MessageLog()
    start = time.monotonic()
    reproduce_run._run_side_by_side([job("a", "a1"), job("a", "a2"), job("b", "b1")],
                                    tiny_reproduction_settings(jobs=2), tmp_path, None, None, None, log)
    when = {name: t - start for _, name, t in finished}
    assert [p for p, _, _ in finished] == ["a", "b", "a"]  # each table's report rewritten after its own run
    assert when["b1"] < 1.5 < when["a1"]  # b1 ran while a1 was still training
    assert sum("started in its own process" in m for m in log) == 3
    assert any(m.startswith("[b/b1] finished") for m in log)


@pytest.mark.parametrize("converge", [True, False])
def test_a_converged_table_gets_its_final_report_when_its_last_run_ends(tmp_path, monkeypatch, converge):
    """`reproduce all --converge --jobs 2`: the first table's final report (its verdicts,
    figures) is written while the pool still trains the next table, and once per table. A
    learning-speed table's report times systems, so it waits for the pool to end (stand-in
    workers that sleep, in place of training)."""
    import sys
    import time

    from rnmt.reproduce import run as reproduce_run
    from rnmt.reproduce.run import reproduce_papers

    corpus = tiny_reproduction_corpus(tmp_path)
    monkeypatch.setattr(reproduce_run, "_worker_command", lambda paper, run, *rest: [
        sys.executable, "-c", f"import time; time.sleep({0.05 if paper == 'atr' else 0.6})"])
    events = []
    monkeypatch.setattr(reproduce_run._Table, "rewrite", lambda self, log: events.append(("rewrite", self.spec.paper)))

    def finish(self, log):
        events.append(("finish", self.spec.paper, time.monotonic()))
        return {"paper": self.spec.paper}

    monkeypatch.setattr(reproduce_run._Table, "finish", finish)
    summaries = reproduce_papers(["atr", "cseq2seq"], tiny_reproduction_settings(seeds=[1], jobs=2, converge=converge),
                                 tmp_path / "out", str(corpus), log=MessageLog())
    ended = time.monotonic()
    assert [s["paper"] for s in summaries] == ["atr", "cseq2seq"]
    finishes = [e for e in events if e[0] == "finish"]
    assert [e[1] for e in finishes] == ["atr", "cseq2seq"]  # once each
    if converge:
        assert finishes[0][2] < ended - 1.0  # atr's report came while cseq2seq's runs trained on
    else:
        assert finishes[0][2] > ended - 0.5  # after the pool: nothing else runs while it times
    assert ("rewrite", "cseq2seq") in events and events[-1][:2] == ("finish", "cseq2seq")
