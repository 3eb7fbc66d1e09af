"""Teacher, students and baselines on the test set: translations, quality and speed.

Every model translates the whole test set with beam 5 and with greedy search on the same
number of CPU threads (1 by default). Speeds on a machine shared with other work move with
the load, so the models are timed in alternating rounds (each model once per round, in
the same order) and each model's fastest round counts: the load it saw least. The beam-5
translations are the ones scored.

What limits a student is measured beside: each model's cross-entropy of the teacher's
outputs on the first distilled training pairs (the pairs the students trained on), and the
share of its parameters in the output layer over the target vocabulary, which every search
step uses whatever the recurrent network's size.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

BEAM = 5
IMITATION_PAIRS = 1000  # distilled pairs each model scores (seconds a model at 1 thread)


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


def output_layer_share(model: Any) -> Optional[float]:
    """The output layers' share of a model's parameters (``output``, the projection onto the
    target vocabulary that every model of rnmt has; an ensemble's summed over its members);
    None where a member has none."""
    members = list(getattr(model, "models", [model]))
    layers = [layer for m in members if (layer := getattr(m, "output", None)) is not None]
    if len(layers) < len(members):
        return None
    total = sum(p.numel() for m in members for p in m.parameters())
    return sum(p.numel() for layer in layers for p in layer.parameters()) / max(total, 1)


def imitation(models: Dict[str, Any], src: List[str], tgt: List[str]) -> Dict[str, dict]:
    """Per model: nats per subword of ``tgt`` (the teacher's outputs) given ``src`` under forced
    decoding, end of sentence included, summed over the corpus (`rnmt.api` ``score``; an
    ensemble with its averaged log-probabilities), and the output layer's share of its parameters."""
    out: Dict[str, dict] = {}
    for name, model in models.items():
        entry: Dict[str, Any] = {"output_layer_share": output_layer_share(model.loaded.model)}
        if src:
            scores = model.score(src, tgt)
            entry["distilled_nll"] = -sum(s.log_prob for s in scores) / max(sum(len(s.tokens) for s in scores), 1)
        out[name] = entry
    return out


def measure_models(models: Dict[str, List[Path]], sources: List[str], threads: int, rounds: int,
                   log: Callable[[str], None], distilled: Tuple[List[str], List[str]] = ([], [])) -> Dict[str, dict]:
    """Per model: beam-5 translations (``hyps``), sentences/s at beam 5 and greedy (fastest
    of ``rounds``), parameters and file size; with ``distilled`` (sources, teacher outputs),
    :func:`imitation` of the first `IMITATION_PAIRS` of them."""
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
    src, tgt = distilled
    for name, facts in imitation(loaded, src[:IMITATION_PAIRS], tgt[:IMITATION_PAIRS]).items():
        out[name].update(facts)
    for name, paths in models.items():
        out[name].update(model_facts(paths))
    return out
