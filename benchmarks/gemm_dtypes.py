"""fp32 against bf16 matrix products on this CPU, at the shapes rnmt's training runs.

    python -m benchmarks.gemm_dtypes [--threads 1] [--rounds 3] [--clock wall|cpu]

Whether bf16 training can be faster than fp32 on a CPU is first a question of its matrix
products: with AMX tiles (``amx_bf16``) oneDNN runs bf16 products several times faster
than fp32 ones; with only the AVX-512 bf16 dot product (``avx512_bf16``) it may not. This
prints the CPU's bf16 features and, for each shape, the GFLOP/s of ``torch.mm`` in fp32 and
in bf16 (best of ``--rounds`` alternating rounds). ``--clock cpu`` times with the process's
CPU time instead of the wall clock: at one thread it is much less disturbed by other
processes on the machine, though not free of them (shared caches and memory).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

SHAPES = [  # (m, k, n, what)
    (60, 512, 1536, "a GRU's recurrent product, 60 rows, 512 units"),
    (512, 60, 1536, "its weight gradient for one step"),
    (1800, 256, 1536, "the input projections of 1,800 target tokens"),
    (1800, 256, 8000, "the output layer of 1,800 target tokens, 8k vocabulary"),
    (2048, 2048, 2048, "a large square product"),
]


def cpu_features() -> str:
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    wanted = ["avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
    return ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in wanted)


def rate(m: int, k: int, n: int, dtype: torch.dtype, clock, seconds: float = 0.3) -> float:
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    for _ in range(2):
        torch.mm(a, b)
    reps, t0 = 0, clock()
    while True:
        torch.mm(a, b)
        reps += 1
        elapsed = clock() - t0
        if elapsed >= seconds and reps >= 3:
            return 2 * m * k * n * reps / elapsed / 1e9


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    print(f"CPU: {cpu_features()}; torch {torch.__version__}, {args.threads} thread(s), {args.clock} clock")
    print("| m x k x n | what | fp32 GFLOP/s | bf16 GFLOP/s | bf16 / fp32 |")
    print("|---|---|---:|---:|---:|")
    for m, k, n, what in SHAPES:
        best = {torch.float32: 0.0, torch.bfloat16: 0.0}
        for _ in range(args.rounds):
            for dtype in best:
                best[dtype] = max(best[dtype], rate(m, k, n, dtype, clock))
        f32, b16 = best[torch.float32], best[torch.bfloat16]
        print(f"| {m} x {k} x {n} | {what} | {f32:.0f} | {b16:.0f} | {b16 / f32:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
