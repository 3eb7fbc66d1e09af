"""Where each run of a reproduction stands, read from its files without training anything
(`rnmt reproduce PAPER [--converge] --status`).

A converged table takes many hours and is filled in over several sittings, so the question
"which runs are done, and how far are the others from stopping?" comes up at every restart.
A run is *finished* when its record (``<paper>[-converged]/<run>.json``) exists, *in
progress* when its directory has a ``log.jsonl`` (with "training now (pid N)" or "stopped"
when its directory has a trainer's lock file to ask), else *not started*. For a run in progress
the log gives the last update, the best dev BLEU and where it was reached, the validations
since then (early stopping ends the run when they reach the patience), the rate's plateau
halvings, and the recent time per update: the median over the last ten logging intervals
(over all of them for a finished run), so an interval spent paused (SIGSTOP) or validating
does not count.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from rnmt.errors import UserError
from rnmt.reproduce.spec import PaperSpec
from rnmt.reproduce.system import plan_runs, record_path
from rnmt.training import run_lock
from rnmt.training.run_log import read_run_log

RECENT_INTERVALS = 10  # logging intervals behind a run in progress's "s/update (median)"


@dataclass
class RunStatus:
    name: str
    state: str  # "finished", "in progress" or "not started"
    steps: Optional[int] = None
    epoch: Optional[float] = None
    best_dev_bleu: Optional[float] = None
    best_step: Optional[int] = None
    since_best: Optional[int] = None  # validations after the best one
    last_validation: Optional[int] = None  # the update of the last scored validation
    plateau_decays: Optional[int] = None
    lr: Optional[float] = None
    seconds_per_update: Optional[float] = None
    train_hours: Optional[float] = None
    stop_reason: Optional[str] = None
    test_bleu: Optional[float] = None
    log_age_minutes: Optional[float] = None


def recent_seconds_per_update(train: List[dict], intervals: int = RECENT_INTERVALS) -> Optional[float]:
    """Median seconds per update over the last ``intervals`` logging intervals (0: all)."""
    rates = [(b["train_seconds"] - a["train_seconds"]) / (b["step"] - a["step"])
             for a, b in zip(train, train[1:])
             if b["step"] > a["step"] and "train_seconds" in a and "train_seconds" in b]
    return statistics.median(rates[-intervals:] if intervals else rates) if rates else None


def in_progress(name: str, log_path: Path, now: float) -> RunStatus:
    log = read_run_log(log_path)
    train, dev = log.train, log.dev
    status = RunStatus(name, "in progress", log_age_minutes=(now - log_path.stat().st_mtime) / 60)
    if train:
        last = train[-1]
        status.steps, status.lr = last["step"], last.get("lr")
        status.epoch = last.get("epoch")  # epochs completed (the record's count is fractional)
        status.train_hours = last.get("train_seconds", 0.0) / 3600
        status.seconds_per_update = recent_seconds_per_update(train)
    scored = [r for r in dev if r.get("dev_bleu") is not None]
    if scored:
        best = max(range(len(scored)), key=lambda i: (scored[i]["dev_bleu"], -i))  # the first of equals
        status.best_dev_bleu, status.best_step = scored[best]["dev_bleu"], scored[best]["step"]
        status.since_best = len(scored) - 1 - best
        status.last_validation = scored[-1]["step"]
        status.plateau_decays = scored[-1].get("plateau_decays")
        status.steps = max(status.steps or 0, scored[-1]["step"])
    return status


def finished(name: str, record: Dict[str, object]) -> RunStatus:
    def number(key: str) -> Optional[float]:
        value = record.get(key)
        return float(value) if isinstance(value, (int, float)) else None

    steps, best_step, decays = number("steps"), number("checkpoint_step"), number("plateau_decays")
    minutes = number("train_minutes")
    return RunStatus(name, "finished", steps=int(steps) if steps is not None else None, epoch=number("epochs"),
                     best_dev_bleu=number("best_dev_bleu"), best_step=int(best_step) if best_step is not None else None,
                     plateau_decays=int(decays) if decays is not None else None,
                     seconds_per_update=number("seconds_per_update"),
                     train_hours=minutes / 60 if minutes is not None else None,
                     stop_reason=str(record.get("stop_reason") or "") or None, test_bleu=number("test_bleu"))


def reproduction_status(spec: PaperSpec, results_dir: Path, systems: Optional[Sequence[str]],
                        seeds: Sequence[int], patience: Optional[int] = None) -> List[RunStatus]:
    """One row per run the table plans for the chosen systems (the main table's by default).
    ``patience``: a converged table's; a finished run that early stopping ended sooner, with
    its checkpoint here, is continuing (`rnmt.reproduce.system.continues`) and read from its log."""
    from rnmt.reproduce.system import stopped_short
    from rnmt.training.trainer import STATE_FILE

    now = time.time()
    rows = []
    for run in plan_runs(spec, spec.select(systems), seeds):
        record, log_path = record_path(results_dir, run), results_dir / "runs" / run.name / "log.jsonl"
        kept_log = results_dir / "logs" / f"{run.name}.log.jsonl"  # the committed copy outlives runs/
        if record.is_file():
            try:
                saved = json.loads(record.read_text(encoding="utf-8"))
            except ValueError:
                saved = None
            # a record that does not parse is reported from the run's log
            done = finished(run.name, saved) if isinstance(saved, dict) else None
            if done is not None and patience is not None and stopped_short(saved, patience) \
                    and (log_path.parent / STATE_FILE).is_file():
                done = None  # continuing under the raised patience: its log says where it stands
            if done is not None:
                # the record's mean counts paused hours; the log's median does not
                for log in (log_path, kept_log):
                    if log.is_file():
                        done.seconds_per_update = recent_seconds_per_update(read_run_log(log).train, intervals=0)
                        break
                rows.append(done)
                continue
        if not log_path.is_file():
            rows.append(RunStatus(run.name, "not started"))
            continue
        try:
            row = in_progress(run.name, log_path, now)
        except UserError as exc:  # one unreadable log must not hide the other runs
            row = RunStatus(run.name, f"log unreadable ({exc})")
        if (log_path.parent / run_lock.LOCK_FILE).is_file():  # runs started since the lock existed
            pid = run_lock.holder(log_path.parent)
            row.state += f", training now (pid {pid})" if pid else ", stopped"
        rows.append(row)
    return rows


def cost_line(rows: Sequence[RunStatus]) -> str:
    """The table's cost so far: its updates, and the hours of one core they took at each run's
    median time per update (pauses and shared cores do not count) beside the logged hours."""
    done = sum(r.state == "finished" for r in rows)
    timed = [r for r in rows if r.steps and r.seconds_per_update is not None]
    updates = sum(r.steps or 0 for r in rows)
    core_hours = sum(r.steps * r.seconds_per_update for r in timed) / 3600  # type: ignore[operator]
    logged = sum(r.train_hours or 0.0 for r in rows)
    return (f"{done} of {len(rows)} runs finished; {updates:,} updates, {core_hours:.1f} h of one core at each "
            f"run's median s/update ({logged:.1f} training h logged, pauses and shared cores included)")


def earliest_stop(row: RunStatus, patience: int, validate_every: int, cap: Optional[int]) -> Optional[int]:
    """The first update at which early stopping could end ``row``, a converged run in
    progress: the validation at which, none improving, ``patience`` follow the best (at most
    ``cap``, the run's update limit). None for a run with no scored validation yet."""
    if row.state.split(",")[0] != "in progress" or row.since_best is None or row.last_validation is None:
        return None
    stop = row.last_validation + max(0, patience - row.since_best) * validate_every
    return stop if cap is None else min(stop, cap)


def to_go_line(rows: Sequence[RunStatus], patience: int, validate_every: int, cap: Optional[int]) -> str:
    """What is left of a converged table at the least: the updates its runs in progress need
    before early stopping can end them (each improvement adds more), their hours of one core
    at each run's recent rate, and the runs not started."""
    left = [(r, earliest_stop(r, patience, validate_every, cap)) for r in rows]
    going = [(r, stop - (r.steps or 0)) for r, stop in left if stop is not None]
    updates = sum(max(0, n) for _, n in going)
    hours = sum(max(0, n) * r.seconds_per_update for r, n in going if r.seconds_per_update) / 3600
    waiting = sum(r.state == "not started" for r in rows)
    return (f"to go, at the least: {updates:,} updates for the {len(going)} run(s) in progress before early stopping "
            f"can end them ({hours:.1f} h of one core at their recent s/update; a new best moves a run's earliest "
            f"stop to {patience * validate_every:,} updates after it), and {waiting} run(s) not started")


def _fmt(value: Optional[float], spec: str) -> str:
    return "-" if value is None else format(value, spec)


def status_table(rows: Sequence[RunStatus], patience: Optional[int]) -> List[str]:
    """A Markdown table of ``rows``; ``patience`` (validations) for the converged protocol."""
    lines = ["| run | state | updates | epochs | best dev BLEU (at update) | validations since best | "
             "rate halvings | lr | s/update (median) | training h | last log line |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        state = r.state + (f" ({r.stop_reason})" if r.stop_reason else "")
        if r.test_bleu is not None:
            state += f", test BLEU {r.test_bleu:.2f}"
        best = _fmt(r.best_dev_bleu, ".2f") + ("" if r.best_step is None else f" ({r.best_step:,})")
        since = "-" if r.since_best is None else (f"{r.since_best} of {patience}" if patience else str(r.since_best))
        age = "-" if r.log_age_minutes is None else f"{r.log_age_minutes:,.0f} min ago"
        lines.append(f"| {r.name} | {state} | {_fmt(r.steps, ',')} | {_fmt(r.epoch, '.4g')} | {best} | {since} | "
                     f"{_fmt(r.plateau_decays, 'd')} | {_fmt(r.lr, '.2e')} | {_fmt(r.seconds_per_update, '.2f')} | "
                     f"{_fmt(r.train_hours, '.1f')} | {age} |")
    return lines
