"""Study. Question: Does a search step chosen straight from the logits (one C++ pass) beat the PyTorch step?
Measured at: 3a09849 (and 1d5fe17).
Answer: yes on the CPU, most for small models, whose steps the vocabulary dominates: 2.1-2.2x at
beam 5 for a 64-unit GRU, 1.1-1.3x for a 256-unit RNNSearch-GRU, the same 517 translations
(docs/cpu-speed.md, "Decoding").

Beam search's and greedy search's step with and without `rnmt.search.fused_step`, on
trained models, alternating in one process:

    python -m benchmarks.studies.fused_step --model RUN [--model RUN ...] [--int8] [--rounds 3] [--sentences 517]

Translates the first ``--sentences`` verses of the Bible test set at beam 5 and greedily on
one thread, each model with both steps in every round, and prints each model's sentences/s
(best round), the speed-up, and how many translations are identical.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from typing import Dict, List

import torch

import rnmt
from rnmt.search import fused_step


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", required=True)
    parser.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    parser.add_argument("--sentences", type=int, default=517)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--int8", action="store_true", help="int8 products (rnmt translate --int8)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    src = open(args.src, encoding="utf-8").read().splitlines()[: args.sentences]
    models = {path: rnmt.load(path, device="cpu", int8=args.int8) for path in args.model}
    fused_applies = fused_step.applies
    steps = {"plain": lambda *a: False, "fused": fused_applies}
    searches = {"beam 5": {"beam": 5}, "greedy": {"greedy": True}}
    best: Dict[tuple, float] = {}
    outputs: Dict[tuple, List[str]] = {}
    for model in models.values():
        model.translate(src[:8])  # warm-up (and the kernels' build)
    for _ in range(args.rounds):
        for path, model in models.items():
            for search, options in searches.items():
                for step, applies in steps.items():
                    fused_step.applies = applies
                    start = time.perf_counter()
                    outputs[path, search, step] = model.translate(src, **options)
                    speed = len(src) / (time.perf_counter() - start)
                    best[path, search, step] = max(best.get((path, search, step), 0.0), speed)
    fused_step.applies = fused_applies
    print(f"commit {_commit()}; {'int8' if args.int8 else 'fp32'}; {len(src)} sentences, 1 thread, "
          f"sentences/s (best of {args.rounds} rounds)")
    print("| model | search | plain step | fused step | speed-up | identical |")
    print("|---|---|---:|---:|---:|---:|")
    for path in models:
        for search in searches:
            plain, fused = best[path, search, "plain"], best[path, search, "fused"]
            same = sum(a == b for a, b in zip(outputs[path, search, "plain"], outputs[path, search, "fused"]))
            print(f"| {path} | {search} | {plain:.1f} | {fused:.1f} | {fused / plain:.2f}x | {same}/{len(src)} |")


if __name__ == "__main__":
    main()
