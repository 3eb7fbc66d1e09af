"""Study. Question: What does the fused C++ additive-attention kernel buy over PyTorch's expression?
Measured at: 571c1e6.
Answer: 1.08x faster forward + backward and 2.91x less peak memory on the largest batch (764 against
2,222 MiB); the kernel stays on by default (docs/cpu-speed.md, "One gradient buffer per
weight and training pass").

What the fused additive-attention kernel (rnmt/kernels) buys, with and without it.

    python -m benchmarks.studies.attention_kernel                  # 256/512, 8k vocabulary, 2 threads
    python -m benchmarks.studies.attention_kernel --threads 1 --rounds 5

Time: RNNSearch-GRU forward + backward on a random batch of typical shape (60 sentences of
30 source and 30 target tokens), kernel on and off in alternating rounds, median per step.
Memory: the peak RSS of a fresh process that builds the model and runs one forward +
backward on the largest batch the peer benchmark allows (4,000 padded tokens at the
100-token length limit: 20 x 100 x 100), once per setting.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

from benchmarks import module_command, module_env
from rnmt.config import ModelConfig
from rnmt.models import build_model


def make_model(vocab: int, emb: int, hidden: int):
    torch.manual_seed(0)
    return build_model(ModelConfig(arch="rnnsearch", cell="gru", emb_size=emb, hidden_size=hidden, dropout=0.1),
                       vocab, vocab)


def step(model, vocab: int, B: int, S: int, T: int) -> None:
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(4, vocab, (B, S), generator=g), torch.randint(4, vocab, (B, T), generator=g)
    logits = model(src, torch.ones(B, S, dtype=torch.bool), tgt)
    torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1)).backward()
    model.zero_grad(set_to_none=True)


def memory_child(args) -> None:
    """One worst-case step; prints the process's peak RSS in MiB (Linux reports KiB)."""
    torch.set_num_threads(args.threads)
    model = make_model(args.vocab, args.emb, args.hidden)
    from rnmt import kernels

    kernels.configure(args.kernels == "1")  # as a run's plan sets runtime.kernels
    kernels.extension()
    step(model, args.vocab, 20, 100, 100)
    print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> int:
    p = argparse.ArgumentParser(description="the additive-attention kernel on and off")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=3, help="timed steps per round and setting")
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--emb", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--memory-only", action="store_true", help="skip the timing")
    p.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kernels", default="1", choices=("0", "1"), help=argparse.SUPPRESS)  # the child's
    args = p.parse_args()
    if args.memory_child:
        memory_child(args)
        return 0
    from rnmt import kernels

    if kernels.extension() is None:
        print("the C++ kernel is not available here; nothing to compare", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    model = make_model(args.vocab, args.emb, args.hidden)
    times = {"1": [], "0": []}
    for flag in ("1", "0"):  # warm-up, untimed
        if not args.memory_only:
            with kernels.use(flag == "1"):
                step(model, args.vocab, 60, 30, 30)
    for _ in range(0 if args.memory_only else args.rounds):
        for flag in ("1", "0"):
            with kernels.use(flag == "1"):
                start = time.perf_counter()
                for _ in range(args.steps):
                    step(model, args.vocab, 60, 30, 30)
                times[flag].append((time.perf_counter() - start) / args.steps)
    memory = {}
    for flag in ("1", "0"):
        env = module_env(dict(os.environ))
        out = subprocess.run(module_command("benchmarks.studies.attention_kernel", "--memory-child", "--kernels", flag,
                                            "--threads", str(args.threads), "--vocab", str(args.vocab),
                                            "--emb", str(args.emb), "--hidden", str(args.hidden)),
                             capture_output=True, text=True, env=env, check=True)
        memory[flag] = json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]
    print(f"RNNSearch-GRU {args.emb}/{args.hidden}, vocabulary {args.vocab}, {args.threads} threads; load average "
          + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    print("| | kernel | PyTorch ops | ratio |")
    print("|---|---:|---:|---:|")
    if times["1"]:
        on, off = statistics.median(times["1"]), statistics.median(times["0"])
        print(f"| forward + backward, 60 x 30 -> 30 (s/step, median of {args.rounds}) | {on:.3f} | {off:.3f} | "
              f"{off / on:.2f}x faster |")
    print(f"| peak RSS of a process running one step at 20 x 100 -> 100 (MiB) | {memory['1']:.0f} | "
          f"{memory['0']:.0f} | {memory['0'] / memory['1']:.2f}x less |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
