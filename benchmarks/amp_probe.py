"""How steady `train.amp: auto`'s CPU probe is: its bf16/fp32 ratio as rnmt measures it (a
simulated batch's products at new shapes, one thread, that thread's CPU time;
`precision.batch_speedup`) beside one repeated product at N threads in wall time, the way it
was measured until b553bd3.

    python -m benchmarks.amp_probe [--hidden 256] [--threads 2] [--trials 3]

Run it once on a quiet machine and once beside other work (training runs): the probe
decides bf16 at `precision.BF16_MIN_SPEEDUP`, so a ratio that load moves across that line
changes the precision a run trains in.
"""

from __future__ import annotations

import argparse
import time

import torch

from rnmt import precision


def wall_ratio(hidden: int, threads: int) -> float:
    """The probe's product at ``threads`` threads, best of 5 alternating rounds in wall time."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a32, b32 = torch.randn(256, hidden), torch.randn(hidden, 3 * hidden)
        operands = {torch.float32: (a32, b32), torch.bfloat16: (a32.bfloat16(), b32.bfloat16())}
        reps = max(2, int(2e9 / (2 * 256 * hidden * 3 * hidden)))
        best = dict.fromkeys(operands, float("inf"))
        for _ in range(5):
            for dtype, (a, b) in operands.items():
                torch.mm(a, b)
                t0 = time.perf_counter()
                for _ in range(reps):
                    torch.mm(a, b)
                best[dtype] = min(best[dtype], time.perf_counter() - t0)
        return best[torch.float32] / best[torch.bfloat16]
    finally:
        torch.set_num_threads(before)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    print(f"threshold {precision.BF16_MIN_SPEEDUP}x; the repeated product [256 x {args.hidden}] x "
          f"[{args.hidden} x {3 * args.hidden}]")
    for trial in range(1, args.trials + 1):
        # a fresh measurement at row counts no earlier trial used (oneDNN keeps the shapes it built)
        rows = tuple(range(41 + 10 * trial, 51 + 10 * trial, 2))
        probe = precision.batch_speedup(args.hidden, rows)
        wall = wall_ratio(args.hidden, args.threads)
        print(f"trial {trial}: rnmt's probe (1 thread, CPU time) {probe:.2f}x; "
              f"{args.threads} threads, wall time {wall:.2f}x", flush=True)


if __name__ == "__main__":
    main()
