"""Training speed with and without one weight-gradient buffer per pass (rnmt/deferred_grads.py).

    python -m benchmarks.weight_grads                                   # RNNSearch-GRU, 256/512
    python -m benchmarks.weight_grads --configs configs/papers/dtmt/dtmt4.yaml --batch-tokens 2000

Each config is trained on the same batches of the bundled sample corpus (fresh model, full
optimiser steps), switching between plain autograd and the deferred weight gradients in
alternate rounds so that a change in machine load hits both; the table gives the median
real target tokens per second of each and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.zoo_ratios import alternating_rates, shared_vocabulary, system
from rnmt import deferred_grads


def main() -> int:
    p = argparse.ArgumentParser(description="training speed with and without deferred weight gradients")
    p.add_argument("--configs", nargs="+", default=["configs/papers/atr/rnnsearch-gru.yaml"])
    p.add_argument("--dims", default="256,512", help="embedding,hidden size (default 256,512)")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--batch-tokens", type=int, default=4000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=5, help="timed training steps per round")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    args.dims = tuple(int(x) for x in args.dims.split(","))
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory(prefix="rnmt-wgrad-") as tmp:
        work = Path(tmp)
        vocab = shared_vocabulary(args, work)
        for config in args.configs:
            cfg, setup = system(config, args, vocab, work)
            speeds = alternating_rates(setup, cfg, args, deferred_grads.enabled)
            plain, deferred = statistics.median(speeds[False]), statistics.median(speeds[True])
            rows.append((Path(config).stem, plain, deferred))
            print(f"{Path(config).stem}: plain {speeds[False]}, deferred {speeds[True]}", flush=True)
    E, H = args.dims
    print(f"\n{E}/{H} dims, batches of {args.batch_tokens} tokens, {args.threads} threads, median of {args.rounds} "
          "alternating rounds; load average " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    print("| config | plain autograd tok/s | one buffer per weight tok/s | speed-up |")
    print("|---|---:|---:|---:|")
    for name, plain, deferred in rows:
        print(f"| {name} | {plain:.0f} | {deferred:.0f} | {deferred / plain:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
