"""Where a distillation stands, read from its directory without decoding or training anything
(`rnmt distill --out DIR --status`).

A distillation on a CPU runs for hours and over several sittings, so "how far is the teacher's
decoding, which runs are done, how far are the others from stopping, what did the report
say?" comes up at every restart. Everything here is read from ``DIR``: the record of what the
distillation is (``distill.json``), the stage records (``stages/*.done``), the decoded chunks,
each run's log and lock file (the same reading as `rnmt reproduce --status`,
`rnmt.reproduce.status`) and the report when it exists.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from rnmt.distill.decode import DECODE_DIR
from rnmt.distill.report import gap_target, speed_target
from rnmt.distill.setup import MANIFEST
from rnmt.distill.students import RUNS_DIR, STAGES_DIR
from rnmt.errors import UserError
from rnmt.reproduce.status import RunStatus, in_progress, recent_seconds_per_update, status_table, to_go_line


def _read_json(path: Path) -> Optional[Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read it ({exc})") from None


def _roles(options: Dict[str, Any]) -> List[str]:
    return ["student"] + (["finetuned"] if options.get("finetune_steps") else []) + \
        (["baseline"] if options.get("baseline", True) else [])


def _train_settings(sections: Dict[str, Any], overrides: List[str]) -> Tuple[Optional[int], int, Optional[int]]:
    """(patience, validate_every, max_steps) of a student config's runs, the ``--set`` overrides
    applied; patience None when early stopping is off."""
    from rnmt.config import TrainConfig, apply_overrides

    train = apply_overrides(json.loads(json.dumps(sections)), overrides, warn_deprecated=False).get("train") or {}
    defaults = TrainConfig()
    return (train.get("patience", defaults.patience), int(train.get("validate_every", defaults.validate_every)),
            train.get("max_steps", defaults.max_steps))


def run_status(out: Path, key: str, run_dir: Path, now: float) -> RunStatus:
    """A run is finished when its stage record exists, in progress when its directory has a
    log, else not started."""
    from rnmt.training import run_lock
    from rnmt.training.run_log import read_run_log

    log_path = run_dir / "log.jsonl"
    done = _read_json(out / STAGES_DIR / f"{key}.done")
    if isinstance(done, dict):
        seconds = done.get("train_seconds")
        row = RunStatus(key, "finished", steps=done.get("steps"), best_dev_bleu=done.get("best_dev_bleu"),
                        best_step=done.get("best_step"), stop_reason=done.get("stop_reason"),
                        train_hours=seconds / 3600 if isinstance(seconds, (int, float)) else None)
        if log_path.is_file():
            row.seconds_per_update = recent_seconds_per_update(read_run_log(log_path).train, intervals=0)
        return row
    if not log_path.is_file():
        return RunStatus(key, "not started")
    try:
        row = in_progress(key, log_path, now)
    except UserError as exc:  # one unreadable log must not hide the other runs
        return RunStatus(key, f"log unreadable ({exc})")
    if (run_dir / run_lock.LOCK_FILE).is_file():
        pid = run_lock.holder(run_dir)
        row.state += f", training now (pid {pid})" if pid else ", stopped"
    return row


def _decode_line(out: Path, options: Dict[str, Any]) -> str:
    data = _read_json(out / STAGES_DIR / "data.done")
    if not isinstance(data, dict):
        return "data: not prepared yet"
    pairs = int(data.get("pairs", 0))
    if (out / STAGES_DIR / "decode.done").is_file():
        return f"decode: done ({pairs:,} training sources translated by the teacher)"
    chunks = math.ceil(pairs / max(1, int(options.get("chunk_lines", 500))))
    have = len(list((out / DECODE_DIR).glob("chunk-*.jsonl")))
    return f"decode: {have} of {chunks} chunks of the {pairs:,} training sources"


def _filter_line(out: Path) -> str:
    counts = _read_json(out / "filter.json")
    if not isinstance(counts, dict):
        return "filter: not yet"
    dropped = ", ".join(f"{reason.replace('_', ' ')} {n:,}" for reason, n in counts.get("dropped", {}).items())
    return f"filter: {counts.get('kept', 0):,} of {counts.get('pairs', 0):,} pairs kept (dropped: {dropped})"


def _report_lines(out: Path) -> List[str]:
    report = _read_json(out / "report.json")
    if not isinstance(report, dict) or not (out / STAGES_DIR / "report.done").is_file():
        return ["report: not yet (it follows the last run and the export)"]
    lines = [f"report: {out / 'report.md'} (teacher test BLEU {report['teacher']['bleu']:.2f})"]
    for name, entry in report.get("students", {}).items():
        t = entry["targets"]
        lines.append(f"  {name}: test BLEU {entry['student']['bleu']:.2f} (mean of seeds); speed "
                     f"{speed_target(t)}; BLEU {gap_target(t)}; beats its baseline in every seed: "
                     f"{'yes' if t['beats_baseline_every_seed'] else 'no'}")
    return lines


def distill_status(out: Path) -> List[str]:
    """The lines `rnmt distill --status` prints for the distillation in ``out``."""
    manifest = _read_json(out / MANIFEST)
    if not isinstance(manifest, dict):
        raise UserError(f"--out {out} holds no distillation ({MANIFEST} missing)")
    options = manifest.get("options") or {}
    students = manifest.get("students") or {}
    seeds = options.get("seeds") or [1]
    teacher = manifest.get("teacher") or {}
    lines = [f"{out}: teacher {teacher.get('pair', '?')} ({len(teacher.get('sha256') or [])} model(s)), students "
             f"{', '.join(students)}, seeds {' '.join(map(str, seeds))}", _decode_line(out, options), _filter_line(out)]
    now = time.time()
    for name, student in students.items():
        patience, every, cap = _train_settings(student.get("sections") or {}, options.get("overrides") or [])
        rows = [run_status(out, f"{name}.{role}.seed{seed}", out / RUNS_DIR / name / f"{role}.seed{seed}", now)
                for seed in seeds for role in _roles(options)]
        stopping = f"patience {patience}" if patience else "no early stopping"
        lines += ["", f"{name} ({stopping}, validations every {every:,} updates, at most {cap:,}):", ""]
        lines += status_table(rows, patience)
        if patience and every:
            lines.append(to_go_line(rows, patience, every, cap))
    return lines + [""] + _report_lines(out)
