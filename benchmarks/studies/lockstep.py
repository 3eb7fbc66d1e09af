"""Study. Question: Does stepping a bidirectional encoder's two directions together (one batched product per
step) beat one direction after the other?
Measured at: 45a4518.
Answer: yes: 1.05x for a GRU encoder and 1.26x for DTMT#4's, the same values and gradients; lockstep
is how rnmt runs them (docs/cpu-speed.md, "The units' element-wise steps in one sweep, and
both directions in lockstep").

A bidirectional encoder's two directions in lockstep against one after the other.

    python -m benchmarks.studies.lockstep                      # GRU, layer-normalised GRU, DTMT#4 block
    python -m benchmarks.studies.lockstep --batch 32 --length 40 --threads 1

Times the forward and backward pass of `rnmt.cells.Bidirectional` (inside a training
pass's gradient scope, as a model runs it) with `Cell.lockstep` on and off, alternating,
and prints the median of each and their ratio. Both ways compute the same values and
gradients (tests/unit/test_kernels.py); only the time differs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from rnmt import cells
from rnmt.deferred_grads import deferred_weight_grads
from rnmt.fast import accelerate

UNITS = {  # name: (registered unit, options)
    "gru": ("gru", {}),
    "gru-ln": ("gru", {"layer_norm": True}),
    "dtmt4": ("transition", {"layer_norm": True, "bottom": "lgru", "depth": 4}),
}


def timed_pass(encoder: cells.Bidirectional, x: torch.Tensor, mask: torch.Tensor, lockstep: bool) -> float:
    unit = type(encoder.fwd)
    original = unit.lockstep
    if not lockstep:
        unit.lockstep = lambda self, other, like: None
    try:
        start = time.perf_counter()
        with deferred_weight_grads():
            out, _, _, _ = encoder(x, mask)
        out.sum().backward()
        return time.perf_counter() - start
    finally:
        unit.lockstep = original


def main() -> int:
    p = argparse.ArgumentParser(description="bidirectional encoders: lockstep against one direction after the other")
    p.add_argument("--units", default=",".join(UNITS), help=f"comma-separated, from {', '.join(UNITS)}")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--length", type=int, default=30)
    p.add_argument("--dims", default="256,512", help="input,hidden size")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    E, d = (int(v) for v in args.dims.split(","))
    print(f"B = {args.batch}, {args.length} positions, {E} -> {d}, {args.threads} threads, forward + backward, "
          f"median of {args.rounds} alternating rounds")
    print("| unit | lockstep ms | one after the other ms | speed-up |")
    print("|---|---:|---:|---:|")
    for name in args.units.split(","):
        kind, options = UNITS[name]
        torch.manual_seed(1)
        encoder = accelerate(cells.Bidirectional(cells.build(kind, E, d, **options),
                                                 cells.build(kind, E, d, **options))).train()
        if encoder.fwd.lockstep(encoder.bwd, torch.zeros(1)) is None:
            print(f"| {name} | - | - | no lockstep here (C++ kernels unavailable?) |")
            continue
        x = torch.randn(args.batch, args.length, E, requires_grad=True)
        mask = torch.ones(args.batch, args.length, dtype=torch.bool)
        times = {True: [], False: []}
        for round_ in range(args.rounds + 1):
            for lockstep in (True, False):
                seconds = timed_pass(encoder, x, mask, lockstep)
                if round_:  # the first round warms up
                    times[lockstep].append(seconds)
        on, off = statistics.median(times[True]), statistics.median(times[False])
        print(f"| {name} | {on * 1e3:.1f} | {off * 1e3:.1f} | {off / on:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
