"""What a converged table's runs cost, in hours of one core, from the records' own clocks
(docs/results.md, "Cost as measured").

Each run's record (``results/<table>/<run>.json``) holds ``wall_minutes`` (training,
validation and checkpoints over every sitting) and ``train_minutes`` (training alone). A run
that cost machine time but has no record (a discarded attempt, a continuation) is counted
from its training log (``--log FILE``, repeatable): the ``train_seconds`` of its last record,
training only, so a little low (``--log FILE@STEP``: a continuation, only what it added after
update STEP). The median-rate estimate that the records' clocks are compared
with (pauses and shared cores left out) is `rnmt reproduce PAPER --converge --status`'s.

    python results/cost.py results/dtmt-converged [--log results/dtmt-converged/patience8/X.log.jsonl@11000 ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, List

NOT_RUNS = {"settings.json", "results.json", "speed.json", "gates.json"}


def records(table: Path) -> List[dict]:
    """The run records of a table directory, in name order."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(table.glob("*.json")) if p.name not in NOT_RUNS]


def logged_training_hours(log: str) -> float:
    """The training hours a run's log says it spent: its last ``train_seconds``; with
    ``FILE@STEP`` (a continuation whose log repeats the run it continued) only those after
    update STEP."""
    path, _, after = log.partition("@")
    first, last = 0.0, 0.0
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("train_seconds"), (int, float)):
            last = float(entry["train_seconds"])
            if after and int(entry.get("step", 0)) <= int(after):
                first = last
    return (last - first) / 3600


def cost(table: Path, logs: List[str]) -> Dict[str, float]:
    runs = records(table)
    wall = sum(float(r.get("wall_minutes") or r.get("train_minutes") or 0) for r in runs) / 60
    train = sum(float(r.get("train_minutes") or 0) for r in runs) / 60
    unrecorded = sum(logged_training_hours(log) for log in logs)
    return {"runs": len(runs), "wall_h": wall, "train_h": train, "unrecorded_h": unrecorded,
            "total_h": wall + unrecorded}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--log", action="append", default=[], metavar="FILE[@STEP]",
                        help="a run without a record: its log (@STEP: count only the training after update STEP)")
    args = parser.parse_args()
    c = cost(args.table, args.log)
    print(f"{args.table}: {c['runs']} runs with records, {c['wall_h']:.1f} h by their wall clocks "
          f"({c['train_h']:.1f} h training), {c['unrecorded_h']:.1f} h of runs without a record (their logs' "
          f"training), {c['total_h']:.1f} h in all")


if __name__ == "__main__":
    main()
