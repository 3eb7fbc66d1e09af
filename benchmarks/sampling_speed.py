"""Sampling's speed, and a digest of the samples, so that two checkouts compare.

    python -m benchmarks.sampling_speed --model RUN [--src test.es] [--lines 100] [--rounds 3]

Draws the first ``--lines`` source lines' samples in three ways (64 per line; 64 per line
with ``epsilon=0.02``; 16 per line with ``topk=10``), one thread, each ``--rounds`` times,
and prints each way's best seconds and the sha256 of its samples' texts: run it at two
commits (``PYTHONPATH`` pointing at each checkout) to time a change of the draw and to see
whether it changed any sample. Stop every other job on the machine while it runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

WAYS: Dict[str, Dict[str, Any]] = {
    "64 samples": {"sample": True, "nbest": 64},
    "64 samples, epsilon 0.02": {"sample": True, "nbest": 64, "epsilon": 0.02},
    "16 samples, top-10": {"sample": True, "nbest": 16, "topk": 10},
}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    ap.add_argument("--lines", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)

    import torch

    import rnmt

    torch.set_num_threads(1)
    model = rnmt.load(args.model, device="cpu")
    src = Path(args.src).read_text(encoding="utf-8").splitlines()[:args.lines]
    model.translate(src[:4], sample=True)  # first-call costs outside the timing
    out = {}
    for name, options in WAYS.items():
        best, samples = float("inf"), []
        for _ in range(args.rounds):
            start = time.perf_counter()
            samples = model.translate(src, **options)
            best = min(best, time.perf_counter() - start)
        texts = json.dumps([[h.text for h in line] for line in samples], ensure_ascii=False)
        out[name] = {"seconds": round(best, 2), "sha256": hashlib.sha256(texts.encode("utf-8")).hexdigest()[:16]}
        print(f"{name:26s} {best:7.2f} s  samples {out[name]['sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
