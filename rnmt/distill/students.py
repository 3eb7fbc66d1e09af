"""The students' and baselines' training runs.

Each student config gives, per seed, up to three runs under ``DIR/runs/NAME/``:

- ``student.seedK``: the config trained on the distilled corpus (``DIR/data/distilled``),
  beside the original corpus at weight ``mix_original`` when that is above 0 (the weighted
  corpora of docs/data.md);
- ``finetuned.seedK``: with ``finetune_steps``, that student fine-tuned on the original
  corpus (``--init-from``: its weights, a fresh optimiser and schedule);
- ``baseline.seedK``: the same config on the original corpus alone, the comparison the
  report tests the student against.

Every run uses the teacher's vocabulary, the config's dev set (early stopping) and one
corpus cache. A run killed part-way resumes from its last checkpoint (`rnmt.api.train`
with ``resume``); a finished run is marked ``DIR/stages/RUN.done`` and not touched again.
"""

from __future__ import annotations

import copy
import json
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from rnmt.distill.options import DistillOptions
from rnmt.distill.setup import Student
from rnmt.errors import UserError
from rnmt.training.checkpoint import atomic_write_text

DATA_DIR, RUNS_DIR, STAGES_DIR = "data", "runs", "stages"


class TrainingStopped(Exception):
    """A run stopped by SIGTERM or SIGINT with its checkpoint saved: the distillation stops
    there, and the same command resumes it."""

    def __init__(self, key: str, signal_name: str) -> None:
        super().__init__(f"{key}: training stopped by {signal_name}, checkpoint saved; run the same distill "
                         f"command again to resume")
        self.signal_name = signal_name

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process the signal ended."""
        return 128 + int(getattr(signal, self.signal_name, signal.SIGTERM))


def _absolute(prefix: Optional[str]) -> Optional[str]:
    """A data prefix from the user's config, made absolute (runs train with their own paths)."""
    return None if prefix is None else str(Path(prefix).expanduser().resolve())


def vocab_keys(out: Path, joint: bool) -> Dict[str, Any]:
    data = out / DATA_DIR
    if joint:
        return {"model": str(data / "spm.model"), "src_model": None, "tgt_model": None}
    return {"model": None, "src_model": str(data / "spm.src.model"), "tgt_model": str(data / "spm.tgt.model")}


def run_tree(student: Student, out: Path, train: Any, seed: int, joint_vocab: bool) -> Dict[str, Any]:
    """The student config's sections with the distillation's data, vocabulary and seed."""
    tree = copy.deepcopy(student.tree)
    data = tree.setdefault("data", {})
    data["train"] = train
    for key in ("dev", "test"):
        if isinstance(data.get(key), str):
            data[key] = _absolute(data[key])
    data["vocab"] = {**(data.get("vocab") or {}), **vocab_keys(out, joint_vocab)}
    data["cache_dir"] = str(out / "cache")
    tree.setdefault("train", {})["seed"] = seed
    return tree


def planned_runs(student: Student, out: Path, options: DistillOptions, joint_vocab: bool) -> List[Dict[str, Any]]:
    """The runs of one student config, in training order: per seed the student, its
    fine-tuning, the baseline. Each: ``key``, ``role``, ``seed``, ``dir``, ``tree``,
    ``overrides``, ``init_from``."""
    data = out / DATA_DIR
    distilled, original = str(data / "distilled"), str(data / "original")
    student_train: Any = distilled if options.mix_original == 0 else [
        {"prefix": distilled, "weight": 1}, {"prefix": original, "weight": options.mix_original}]
    runs: List[Dict[str, Any]] = []
    base = out / RUNS_DIR / student.name
    for seed in options.seeds:
        first = dict(key=f"{student.name}.student.seed{seed}", role="student", seed=seed,
                     dir=base / f"student.seed{seed}", tree=run_tree(student, out, student_train, seed, joint_vocab),
                     overrides=[], init_from=None)
        runs.append(first)
        if options.finetune_steps:
            runs.append(dict(key=f"{student.name}.finetuned.seed{seed}", role="finetuned", seed=seed,
                             dir=base / f"finetuned.seed{seed}",
                             tree=run_tree(student, out, original, seed, joint_vocab),
                             overrides=[f"train.max_steps={options.finetune_steps}"] + (
                                 [] if options.finetune_lr is None else [f"train.lr={options.finetune_lr}"]),
                             init_from=first["dir"]))
        if options.baseline:
            runs.append(dict(key=f"{student.name}.baseline.seed{seed}", role="baseline", seed=seed,
                             dir=base / f"baseline.seed{seed}",
                             tree=run_tree(student, out, original, seed, joint_vocab),
                             overrides=[], init_from=None))
    return runs


def final_student(runs: List[Dict[str, Any]], seed: int) -> Dict[str, Any]:
    """The run that is the student of ``seed``: the fine-tuned one where there is one."""
    mine = [r for r in runs if r["seed"] == seed and r["role"] in ("student", "finetuned")]
    return mine[-1]


def train_run(run: Dict[str, Any], out: Path, log: Callable[[str], None]) -> Dict[str, Any]:
    """Train (or resume, or skip when done) one run; its summary."""
    from rnmt.api import train
    from rnmt.training.setup import STATE_FILE

    done = out / STAGES_DIR / f"{run['key']}.done"
    if done.is_file():
        return json.loads(done.read_text(encoding="utf-8"))
    resume = (run["dir"] / STATE_FILE).is_file()
    log(f"train: {run['key']} ({'resuming' if resume else 'starting'}) in {run['dir']}")
    prefix = f"[{run['key']}] "
    summary = train(run["tree"], run["overrides"], out=run["dir"], resume=resume,
                    log=lambda line: log(prefix + line), init_from=run["init_from"])
    if summary.get("stop_signal"):
        raise TrainingStopped(run["key"], summary["stop_signal"])
    record = {k: summary.get(k) for k in ("steps", "stop_reason", "best_dev_bleu", "best_step", "train_seconds",
                                          "wall_seconds")}
    done.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(done, json.dumps(record, indent=1) + "\n")
    return record


def train_runs(planned: Dict[str, List[Dict[str, Any]]], out: Path, jobs: int, log: Callable[[str], None]) -> None:
    """Train every planned run (``planned``: per student config, `planned_runs`): one after
    the other in this process, or with ``jobs`` > 1 up to that many side by side, each in its
    own process (`rnmt.training.side_by_side`; its output in ``DIR/runs/NAME/KEY.log``). A
    fine-tuning run follows its student in the same process; finished runs are skipped."""
    chains = [chain for runs in planned.values() for chain in _chains(runs)
              if not all((out / STAGES_DIR / f"{run['key']}.done").is_file() for run in chain)]
    if jobs <= 1 or len(chains) <= 1:
        for chain in chains:
            for run in chain:
                train_run(run, out, log)
        return
    from rnmt.training.side_by_side import Job, run_side_by_side

    pool = run_side_by_side([Job(chain[0]["key"], _worker_command(chain, out),
                                 chain[0]["dir"].parent / f"{chain[0]['key']}.log") for chain in chains], jobs, log)
    if pool.stopped:
        raise TrainingStopped("training", pool.stopped[0])
    if pool.failed:
        raise UserError("distillation runs failed: " + "; ".join(pool.failed))


def _chains(runs: List[Dict[str, Any]]) -> List[List[Dict[str, Any]]]:
    """The runs grouped into what must run in order: a student and its fine-tuning; a baseline alone."""
    chains: List[List[Dict[str, Any]]] = []
    for run in runs:
        if run["role"] == "finetuned":
            chains[-1].append(run)  # `planned_runs` puts it right after its student
        else:
            chains.append([run])
    return chains


def _worker_command(chain: List[Dict[str, Any]], out: Path) -> List[str]:
    payload = {"out": str(out), "runs": [{**run, "dir": str(run["dir"]),
                                          "init_from": None if run["init_from"] is None else str(run["init_from"])}
                                         for run in chain]}
    return [sys.executable, "-m", "rnmt.distill.worker", json.dumps(payload)]
