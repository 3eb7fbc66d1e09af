"""Training speed of two systems measured side by side, for the papers' speed claims.

The seconds per update in a reproduction's records were measured whenever each run
trained, under whatever else the machine was doing at the time (another run beside it,
other work), so two records' speeds are not a fair comparison. A speed claim is judged
instead from a controlled measurement: both systems' models (their runs' resolved
configs, fresh weights: speed does not depend on their values) train the same batches in
alternating rounds, A then B, in one process on the same threads, and each round gives
one ratio. Cached in ``speed.json``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch

from rnmt.training.checkpoint import atomic_write_text

ROUNDS, STEPS, WARMUP = 3, 20, 3


def _setup(config_path: Path, work_dir: Path, threads: int):
    from rnmt.config import load_config
    from rnmt.training.trainer import Trainer

    cfg = load_config(config_path, [f"train.threads={threads}", "train.device=cpu"])
    cfg.data.dev = None  # the trainer's set-up gives the vocabulary, corpus and model; no validation
    return cfg, Trainer(cfg, work_dir, log=lambda *_: None)


def measure_pair(config_a: Path, config_b: Path, work_dir: Path, threads: int, rounds: int = ROUNDS,
                 steps: int = STEPS, warmup: int = WARMUP) -> Dict[str, object]:
    """Target tokens/s of both configs in ``rounds`` alternating rounds of ``steps`` updates."""
    from rnmt.bench.throughput import train_throughput

    torch.set_num_threads(threads)
    pairs = []
    for name, path in (("a", config_a), ("b", config_b)):
        cfg, setup = _setup(path, work_dir / name, threads)
        pairs.append((cfg, setup))
    speeds: Dict[str, List[float]] = {"a": [], "b": []}
    for _ in range(rounds):
        for name, (cfg, setup) in zip(("a", "b"), pairs):
            torch.manual_seed(cfg.train.seed)  # the same batches in every round
            result = train_throughput(setup.model, setup.corpus, cfg, steps, warmup, setup.device)
            speeds[name].append(result["train_tokens_per_s"])
    ratios = [a / b for a, b in zip(speeds["a"], speeds["b"])]
    return {"tokens_per_s_a": speeds["a"], "tokens_per_s_b": speeds["b"], "ratios": ratios,
            "ratio": statistics.median(ratios), "rounds": rounds, "steps": steps, "threads": threads}


def controlled_speeds(claims, run_dirs: Dict[str, Path], out_dir: Path, work_dir: Path, threads: int,
                      log: Callable[[str], None], provenance: Optional[Dict[str, object]] = None) -> Dict[str, dict]:
    """{"a|b": measurement} for every speed claim whose two runs exist; cached in speed.json
    (a pair once measured is not measured again). ``provenance`` (the code's commit and the
    machine) is stored with each new measurement: a speed figure names where it was taken."""
    cache = out_dir / "speed.json"
    known = json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    for claim in claims:
        key = f"{claim.a}|{claim.b}"
        if claim.kind != "faster" or key in known:
            continue
        paths = [run_dirs.get(claim.a), run_dirs.get(claim.b)]
        if not all(p is not None and (p / "trained.json").is_file() for p in paths):
            continue
        log(f"timing {claim.a} against {claim.b}: {ROUNDS} alternating rounds of {STEPS} updates")
        known[key] = {**measure_pair(paths[0] / "config.yaml", paths[1] / "config.yaml",
                                     work_dir / key.replace("|", "-vs-"), threads), **(provenance or {})}
        atomic_write_text(cache, json.dumps(known, indent=1) + "\n")
    return known
