"""Reading a training run's ``log.jsonl`` (written by ``rnmt.training.reporting.RunReport.write``).

The log holds three kinds of record, one JSON object per line: a training window
(``loss``, ``tokens_per_s``, ``train_seconds``, ...), a validation (``dev_loss``,
``dev_bleu``, ...) and a skipped non-finite update (``skipped_nonfinite`` alone).

Two things make a raw log differ from the run's history, and every reader needs both
handled the same way, so they are handled here once:

- a resumed run goes back to its last checkpoint and logs those steps again, so a record
  whose step does not advance past the previous one of its kind replaces the ones it
  repeats (the earlier ones describe updates whose weights were thrown away);
- a kill can cut a line short, and the resumed run then appends to that line, so a line
  that does not parse is skipped wherever it is (the record appended to it is lost, and
  the discarded branch's record of that step, if any, stands in for it), while a file in
  which no line is a record is an error. So is a line that parses but is not a record as
  the trainer writes one (an integer step, every value a number or null): skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from rnmt.errors import UserError

LOG_FILE = "log.jsonl"


@dataclass
class RunLog:
    path: Path
    train: List[dict] = field(default_factory=list)  # training windows, steps increasing
    dev: List[dict] = field(default_factory=list)  # validations, steps increasing
    skipped_lines: int = 0  # lines that were not records (cut by a kill)

    @property
    def last_dev(self) -> Optional[dict]:
        return self.dev[-1] if self.dev else None


def log_file(run: str | Path) -> Path:
    """A run directory's ``log.jsonl``, or the log file itself; a clear error when neither exists."""
    path = Path(run)
    path = path / LOG_FILE if path.is_dir() else path
    if not path.is_file():
        raise UserError(f"{path}: no such training log (expected a run directory or its {LOG_FILE})")
    return path


def _append(rows: List[dict], row: dict) -> None:
    while rows and rows[-1]["step"] >= row["step"]:
        rows.pop()  # logged again after a resume: the later record is the run's history
    rows.append(row)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_record(row: object) -> bool:
    """A JSON object with an integer ``step`` whose every value is a number or null, as the
    trainer writes them: anything else (a cut line, an edited one) is not the run's history."""
    return (isinstance(row, dict) and isinstance(row.get("step"), int) and not isinstance(row["step"], bool)
            and all(value is None or _number(value) for value in row.values()))


def read_run_log(path: Path) -> RunLog:
    """The run's training and validation records, resumes and cut lines resolved."""
    log = RunLog(Path(path))
    first_bad: Optional[int] = None
    lines = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            lines += 1
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if isinstance(row, dict) and "plan" in row:
                continue  # the execution plan a sitting started with (rnmt.training.setup): not history
            if not _is_record(row):
                log.skipped_lines += 1
                first_bad = first_bad or lineno
                continue
            if row.get("dev_bleu") is not None or "dev_loss" in row:
                _append(log.dev, row)
            elif "loss" in row:
                _append(log.train, row)
    if lines and log.skipped_lines == lines:
        raise UserError(f"{path}:{first_bad}: not a training log record (no line of the file is one)")
    return log
