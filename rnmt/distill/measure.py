"""Teacher, students and baselines on the test set: translations, quality and speed.

Every model translates the whole test set with beam 5 and with greedy search on the same
number of CPU threads (1 by default). Speeds on a machine shared with other work move with
the load, so the models are timed in alternating rounds (each model once per round, in
the same order) and each model's fastest round counts: the load it saw least. The beam-5
translations are the ones scored.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

BEAM = 5


def training_precision(path: Path) -> str:
    """The precision a model was trained in, from the plan its run recorded (``plan.json``
    beside the checkpoint); "unknown" without one."""
    from rnmt.plan.plan import PLAN_FILE, read_plan

    plan = read_plan((path if path.is_dir() else path.parent) / PLAN_FILE)
    return plan.precision.value if plan is not None else "unknown"


def model_facts(paths: Sequence[Path]) -> Dict[str, Any]:
    """Parameters and checkpoint bytes (an ensemble's summed over its members), and the
    precision each member was trained in (runs on different machines may differ)."""
    from rnmt.models.loading import count_parameters, load_model

    params, size = 0, 0
    for path in paths:
        loaded = load_model(path)
        params += count_parameters(loaded.model)["total"]
        size += Path(loaded.path).stat().st_size
    precisions = sorted({training_precision(Path(p)) for p in paths})
    return {"parameters": params, "file_bytes": size, "training_precision": "+".join(precisions)}


def measure_models(models: Dict[str, List[Path]], sources: List[str], threads: int, rounds: int,
                   log: Callable[[str], None]) -> Dict[str, dict]:
    """Per model: beam-5 translations (``hyps``), sentences/s at beam 5 and greedy (fastest
    of ``rounds``), parameters and file size."""
    import torch

    from rnmt.api import load

    loaded = {name: load([str(p) for p in paths], device="cpu") for name, paths in models.items()}
    torch.set_num_threads(threads)
    out: Dict[str, dict] = {name: {"sentences_per_s": 0.0, "greedy_sentences_per_s": 0.0} for name in models}
    for r in range(rounds):
        for name, model in loaded.items():
            for key, options in (("sentences_per_s", {"beam": BEAM}), ("greedy_sentences_per_s", {"greedy": True})):
                start = time.perf_counter()
                hyps = model.translate(sources, **options)
                speed = len(sources) / max(time.perf_counter() - start, 1e-9)
                out[name][key] = max(out[name][key], speed)
                if "beam" in options:
                    out[name]["hyps"] = hyps
            log(f"report: round {r + 1}/{rounds}, {name}: {out[name]['sentences_per_s']:.1f} sentences/s at beam "
                f"{BEAM}, {out[name]['greedy_sentences_per_s']:.1f} greedy")
    for name, paths in models.items():
        out[name].update(model_facts(paths))
    return out
