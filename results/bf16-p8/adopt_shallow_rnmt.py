#!/usr/bin/env python3
"""Take the bf16 control's ShallowRNMT runs as this table's ShallowRNMT runs, after checking
that the two are one computation.

`../dtmt-converged/shallow-rnmt-bf16.seedK` trained ShallowRNMT with `train.amp: bf16` and
patience 8 on an AVX-512-bf16 EPYC (Zen 5): exactly what this table's `shallow-rnmt.seedK`
(`--set train.amp=bf16`, patience 8, the same class of CPU) trains. bf16 training here is
deterministic, so the same run started again repeats every loss. This script compares
the training losses that a short start of this table's run logged (CHECK_DIR, from

    rnmt reproduce dtmt --converge --updates 300 --dev-sentences 0 --jobs 1 \
        --set train.amp=bf16 --systems shallow-rnmt --seeds K --out CHECK_DIR

) with the control's log, record by record, and only when every record that covers the same
updates is equal to the last digit writes the control's record, test translations and log
under this table's run name, with ``same_computation_as`` saying where they came from and
``identity_check`` what was compared. A record that the control's log splits at a resume
(its mean covers other updates) is listed, not compared.

    python results/bf16-p8/adopt_shallow_rnmt.py SEED CHECK_DIR     # from the repository root
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

CONTROL = Path("results/dtmt-converged")
TABLE = Path("results/bf16-p8/dtmt-converged")


def training_records(path: Path) -> dict:
    """{step: record} of a log's training-loss records, and the steps each one's mean starts after."""
    out, previous = {}, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "loss" in record and "dev_loss" not in record:
            out[record["step"]] = (previous, record)
            previous = record["step"]
    return out


def main(seed: int, check_dir: Path) -> int:
    control_run, run = f"shallow-rnmt-bf16.seed{seed}", f"shallow-rnmt.seed{seed}"
    check_log = check_dir / "dtmt-converged" / "runs" / "shallow-rnmt" / "log.jsonl"
    ours, theirs = training_records(check_log), training_records(CONTROL / "logs" / f"{control_run}.log.jsonl")
    compared, skipped = [], []
    for step, (start, record) in sorted(ours.items()):
        if step not in theirs:
            continue
        if theirs[step][0] != start:  # the control resumed inside this window: its mean covers other updates
            skipped.append(step)
            continue
        if record["loss"] != theirs[step][1]["loss"]:
            print(f"error: step {step}: loss {record['loss']!r} here, {theirs[step][1]['loss']!r} in {control_run}; "
                  f"not the same computation, nothing written", file=sys.stderr)
            return 1
        compared.append(step)
    if len(compared) < 2:
        print(f"error: only {len(compared)} comparable records in {check_log}; train the check longer",
              file=sys.stderr)
        return 1
    record = json.loads((CONTROL / f"{control_run}.json").read_text(encoding="utf-8"))
    record.update(system="shallow-rnmt", run=run, label="ShallowRNMT (GRU)")
    record["same_computation_as"] = f"{CONTROL}/{control_run}.json (the bf16 control, trained on the machine it names)"
    record["identity_check"] = {"command": f"rnmt reproduce dtmt --converge --updates 300 --dev-sentences 0 "
                                           f"--jobs 1 --set train.amp=bf16 --systems shallow-rnmt --seeds {seed}",
                                "equal_training_losses_at_steps": compared,
                                "not_comparable_at_steps": skipped,
                                "check_plan_cpu": json.loads(check_log.read_text(encoding="utf-8").splitlines()[0])
                                .get("plan", {}).get("cpu", {}).get("flags")}
    (TABLE / "hyp").mkdir(parents=True, exist_ok=True)
    (TABLE / "logs").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONTROL / "hyp" / f"{control_run}.en", TABLE / "hyp" / f"{run}.en")
    shutil.copyfile(CONTROL / "logs" / f"{control_run}.log.jsonl", TABLE / "logs" / f"{run}.log.jsonl")
    (TABLE / f"{run}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"{run}: the control's record adopted (equal losses at steps {compared}; "
          f"{skipped or 'none'} split by the control's resume)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(int(sys.argv[1]), Path(sys.argv[2])))
