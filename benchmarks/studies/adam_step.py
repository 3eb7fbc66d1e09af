"""Study. Question: Is PyTorch's fused Adam worth taking on the CPU, where its default is a Python loop per tensor?
Measured at: 462f7e6.
Answer: yes: one update of the peer-size RNNSearch-GRU took 10.2 ms fused against 50.3 with the loop
(one thread; 9.4 against 25.9 at two), the same update up to rounding; rnmt builds Adam fused
(docs/cpu-speed.md, "Fused Adam").

Time one Adam update of the peer-size RNNSearch-GRU's parameters: PyTorch's loop (its CPU
default), its multi-tensor ("foreach") version and its fused kernel (rnmt's choice).

    python -m benchmarks.studies.adam_step [--threads 1] [--rounds 5] [--dims 256,512]

Random gradients; the three optimisers step in turn, ``--rounds`` times, five steps each;
the best round's milliseconds per step are printed.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dims", default="256,512")
    ap.add_argument("--vocab", type=int, default=8000)
    args = ap.parse_args()
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    torch.set_num_threads(args.threads)
    emb, hidden = (int(x) for x in args.dims.split(","))
    model = build_model(ModelConfig(emb_size=emb, hidden_size=hidden, src_vocab_size=args.vocab,
                                    tgt_vocab_size=args.vocab))
    params = list(model.parameters())
    for p in params:
        p.grad = torch.randn_like(p)
    kinds = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    optimisers = {k: torch.optim.Adam(params, lr=1e-3, **kw) for k, kw in kinds.items()}
    for opt in optimisers.values():
        opt.step()  # state allocated outside the clock
    best = {k: float("inf") for k in optimisers}
    for _ in range(args.rounds):
        for k, opt in optimisers.items():
            start = time.perf_counter()
            for _ in range(5):
                opt.step()
            best[k] = min(best[k], (time.perf_counter() - start) / 5 * 1000)
    print(f"{sum(p.numel() for p in params):,} parameters in {len(params)} tensors, {args.threads} thread(s): "
          + ", ".join(f"{k} {v:.1f} ms" for k, v in best.items()))


if __name__ == "__main__":
    main()
