"""Study. Question: Should the label-smoothed loss kernel read bf16 scores directly instead of a float32 copy?
Measured at: 61ad74c.
Answer: yes: 115.5 -> 32.5 ms per forward + backward at one thread (74.4 -> 19.3 at two), the loss and
gradient bit for bit those of the float32 copy; the kernel reads bf16 (docs/precision.md,
"bf16 training").

Time the label-smoothed loss (forward and backward) on bf16 scores, as CPU bf16 autocast
leaves them: read directly by the C++ kernel (rnmt's path) against a float32 copy first (the
path before), which the gradient is then cast back from.

    python -m benchmarks.studies.loss_bf16 [--tokens 1800] [--vocab 8000] [--threads 2] [--rounds 5]

The two paths alternate, ``--rounds`` times three passes each; the best round's
milliseconds per pass are printed, with the loss of each (equal: the kernel sums in float32).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=1800, help="target tokens per batch (the peer benchmark's ~1,790)")
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from rnmt import kernels
    from rnmt.training.loss import label_smoothed_nll

    if kernels.extension() is None:
        sys.exit("the C++ kernels are not available here (runtime.kernels off or no compiler)")
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    scores = (torch.randn(args.tokens, args.vocab, generator=g) * 3).to(torch.bfloat16)
    target = torch.randint(0, args.vocab, (args.tokens,), generator=g)
    mask = torch.ones(args.tokens, dtype=torch.bool)

    def direct():
        x = scores.clone().requires_grad_()
        loss, _ = label_smoothed_nll(x, target, mask, 0.1)
        loss.backward()
        return float(loss.detach())

    def copy():
        x = scores.clone().requires_grad_()
        loss, _ = label_smoothed_nll(x.float(), target, mask, 0.1)
        loss.backward()
        return float(loss.detach())

    paths = {"float32 copy": copy, "bf16 read directly": direct}
    losses = {k: f() for k, f in paths.items()}
    best = {k: float("inf") for k in paths}
    for _ in range(args.rounds):
        for k, f in paths.items():
            start = time.perf_counter()
            for _ in range(3):
                f()
            best[k] = min(best[k], (time.perf_counter() - start) / 3 * 1000)
    print(f"{args.tokens} x {args.vocab} bf16 scores, {args.threads} thread(s): "
          + ", ".join(f"{k} {best[k]:.1f} ms (loss {losses[k]:.4f})" for k in paths)
          + f"; {best['float32 copy'] / best['bf16 read directly']:.2f}x")


if __name__ == "__main__":
    main()
