#!/usr/bin/env python3
"""Fault injection for training: kill a tiny run again and again, resume, compare.

The script trains a tiny RNNSearch on the bundled sample once without interruption (the
reference), then trains it again as ``rnmt train`` subprocesses that it kills ``--kills``
times, each time at a random moment after the run's first checkpoint, with SIGKILL or
SIGTERM. A third of the kills wait for a checkpoint write to be in progress (a ``.tmp``
file in the run directory) and land in it. After every kill the run is resumed with
``--resume``; the last segment runs to ``--steps``. Then it checks that nothing was lost:

- every resume succeeded and the run reached ``--steps``;
- the loss logged for every step equals the reference's (steps that were trained twice,
  once before a kill and again after the resume, have equal losses both times);
- the final weights equal the reference's.

    python -m benchmarks.faults --kills 20 --json faults.json

It prints one JSON object (kills by kind, kills that landed during a write, the largest
loss and weight differences, wall time). Only local processes and files are involved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import yaml

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


def write_corpus(directory: Path, n: int) -> str:
    for lang in ("es", "en"):
        lines = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:n]
        (directory / f"train.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(directory / "train")


def write_config(directory: Path, train: str, steps: int) -> Path:
    """No dev set, a checkpoint after every update: kills find writes to land in."""
    tree = {
        "data": {"train": train, "src": "es", "tgt": "en", "batch_tokens": 600, "max_len": 60,
                 "vocab": {"size": 300}},
        "model": {"emb_size": 16, "hidden_size": 24, "dropout": 0.1},
        "train": {"max_steps": steps, "log_every": 1, "save_every": 1, "keep_last": 2, "lr": 0.003,
                  "warmup_steps": 2, "threads": 1, "progress": False, "patience": None, "device": "cpu"},
    }
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return path


def train_cmd(config: Path, out: Path, resume: bool) -> List[str]:
    return [sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out)] + (["--resume"] if resume else [])


def step_losses(out: Path) -> Dict[int, List[float]]:
    """Every loss logged per step (a step trained twice appears twice)."""
    losses: Dict[int, List[float]] = {}
    for line in (out / "log.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut by SIGKILL cannot be told apart from none
            continue
        if "loss" in record:
            losses.setdefault(record["step"], []).append(record["loss"])
    return losses


def writing(out: Path, since: float) -> bool:
    """A temporary file of this segment exists (older ones are leftovers of earlier kills)."""
    for p in out.iterdir():
        try:
            if p.name.endswith(".tmp") and p.stat().st_mtime >= since:
                return True
        except OSError:
            pass
    return False


def logged(out: Path) -> int:
    try:
        return len((out / "log.jsonl").read_text(encoding="utf-8").splitlines())
    except OSError:
        return 0


def kill_once(proc: subprocess.Popen, out: Path, rng: random.Random, sig: int, during_write: bool,
              max_delay: float) -> Optional[bool]:
    """Kill ``proc`` once this segment has a checkpoint and has trained (so the kill lands in
    training, not in start-up); returns whether a write was in progress, or None when the
    run finished before the kill."""
    since, start_lines = time.time() - 0.01, logged(out)
    state = out / "train_state.pt"
    while not state.exists() or logged(out) <= start_lines:
        if proc.poll() is not None:
            return None
        time.sleep(0.005)
    deadline = time.monotonic() + rng.uniform(0.0, max_delay)
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.002)
    if during_write:
        give_up = time.monotonic() + 10
        while not writing(out, since) and proc.poll() is None and time.monotonic() < give_up:
            pass  # busy-wait: a write of a tiny checkpoint lasts milliseconds
    if proc.poll() is not None:
        return None
    in_write = writing(out, since)
    proc.send_signal(sig)
    return in_write


def run_faults(work: Path, kills: int, steps: int, seed: int = 0, max_delay: float = 3.0,
               timeout: float = 600.0) -> Dict[str, object]:
    import torch

    from rnmt.models import load_model

    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    config = write_config(work, write_corpus(work, 240), steps)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    ref = work / "reference"
    subprocess.run(train_cmd(config, ref, False), env=env, check=True, timeout=timeout,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    run = work / "killed"
    counts = {"SIGKILL": 0, "SIGTERM": 0, "during_write": 0, "sigterm_exit_codes": []}
    resume, done = False, 0
    while done < kills:
        proc = subprocess.Popen(train_cmd(config, run, resume), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
        in_write = kill_once(proc, run, rng, sig, during_write=done % 3 == 2, max_delay=max_delay)
        _, err = proc.communicate(timeout=timeout)
        if in_write is None:  # finished first: start over from the reference's beginning
            raise RuntimeError(f"the run finished before kill {done + 1}; raise --steps\n{err}")
        counts[signal.Signals(sig).name] += 1
        counts["during_write"] += int(in_write)
        if sig == signal.SIGTERM:
            counts["sigterm_exit_codes"].append(proc.returncode)
            # 143: stopped with a checkpoint; -15: killed while still starting up (before
            # the handler is installed there is nothing to save).
            if proc.returncode not in (128 + signal.SIGTERM, -signal.SIGTERM):
                raise RuntimeError(f"SIGTERM: exit code {proc.returncode}\n{err}")
        resume, done = True, done + 1
    final = subprocess.run(train_cmd(config, run, True), env=env, timeout=timeout, capture_output=True, text=True)
    if final.returncode != 0:
        raise RuntimeError(f"the last resume failed ({final.returncode}):\n{final.stderr}")

    a, b = step_losses(ref), step_losses(run)
    missing = sorted(set(range(1, steps + 1)) - set(b))
    loss_diff = max(abs(x - a[s][0]) for s in b for x in b[s])
    wa = load_model(ref / f"ckpt-{steps}.safetensors").model.state_dict()
    wb = load_model(run / f"ckpt-{steps}.safetensors").model.state_dict()
    weight_diff = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    leftovers = [p.name for p in run.iterdir() if p.name.endswith(".tmp")]
    return {"kills": kills, **counts, "steps": steps, "missing_steps": missing,
            "steps_trained_twice": sum(len(v) - 1 for v in b.values()),
            "max_loss_diff": loss_diff, "max_weight_diff": weight_diff,
            "tmp_files_left": leftovers, "seconds": round(time.monotonic() - t0, 1),
            "torch_threads": torch.get_num_threads()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--steps", type=int, default=200, help="updates of the run (default: 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-delay", type=float, default=3.0, help="longest random wait before a kill (s)")
    ap.add_argument("--work", help="working directory (default: a temporary one)")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rnmt-faults-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        result = run_faults(work, args.kills, args.steps, args.seed, args.max_delay)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    ok = not result["missing_steps"] and result["max_loss_diff"] < 1e-6 and result["max_weight_diff"] < 1e-6
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
