"""The export stage: each student through ``rnmt export``, where that command exists.

`rnmt.export` (a runtime without PyTorch) is not part of every rnmt: when the package is
absent the stage is skipped with a note in the report, and the students stay plain runs.
A failed export is noted too; it does not undo the distillation.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, List

from rnmt.training.checkpoint import atomic_write_text


def export_students(out: Path, runs: List[dict], int8: bool, log: Callable[[str], None],
                    shortlists: bool = False) -> List[str]:
    """Export each run (with the readout step and output layer a shortlist needs where
    ``shortlists``); the notes for the report."""
    if importlib.util.find_spec("rnmt.export") is None:
        note = "export: skipped: this rnmt has no rnmt.export package (the students are runs under runs/)"
        log(note)
        return [note]
    notes = []
    for run in runs:
        done = out / "stages" / f"export.{run['key']}.done"
        if done.is_file():
            continue
        target = out / "export" / run["key"]
        target.parent.mkdir(parents=True, exist_ok=True)  # rnmt export wants the parent of --out
        command = [sys.executable, "-m", "rnmt", "export", str(run["dir"]), "--out", str(target)]
        command += ["--int8"] if int8 else []
        command += ["--shortlists"] if shortlists else []
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no message"])[-1]
            notes.append(f"export of {run['key']} failed: {last}")
            log(notes[-1])
            continue
        done.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(done, json.dumps({"export": str(target)}) + "\n")
        log(f"export: {run['key']} -> {target}")
    return notes
