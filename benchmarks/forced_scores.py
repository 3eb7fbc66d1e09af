"""Scoring given translations: one teacher-forced pass per batch against step by step.

    python -m benchmarks.forced_scores --model RUN --src SRC --tgt TGT [--threads 2] [--rounds 3]
    python -m benchmarks.forced_scores --config CONFIG [--set KEY=VALUE ...] [--pairs 200]

`rnmt score` and `rnmt translate --scores` compute each target subword's log-probability
by forced decoding. This times, in one process on the same pairs, the step-by-step loop of
`rnmt.search.forced.forced_decode` (what both did before) and the one-pass
`forced_log_probs` (what they do now), alternating, and prints the median seconds of each,
the speed-up and the largest difference between their log-probabilities. Run it on a quiet
machine. With ``--config`` the model is the config's at random weights (8,000-word
vocabularies) and the pairs are random ids of 10-49 subwords each side, seeded: the time
of scoring does not depend on what the weights say.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from rnmt.api import load
from rnmt.search.forced import forced_decode, forced_log_probs


def random_model_and_pairs(config: str, sets: list, n: int):
    from rnmt.config import load_config
    from rnmt.models import build_model

    cfg = load_config(config, sets)
    torch.manual_seed(0)
    model = build_model(cfg.model, 8000, 8000).eval()
    g = torch.Generator().manual_seed(1)

    def sentences():
        lengths = torch.randint(10, 50, (n,), generator=g)
        return [torch.randint(4, 8000, (int(k),), generator=g).tolist() for k in lengths]

    return model, sentences(), sentences()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="a trained run or checkpoint (with --src and --tgt)")
    p.add_argument("--src")
    p.add_argument("--tgt")
    p.add_argument("--config", help="instead: this config's model at random weights, on random pairs")
    p.add_argument("--set", nargs="*", default=[], help="config overrides, KEY=VALUE")
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-tokens", type=int, default=4000)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.config:
        model, src, tgt = random_model_and_pairs(args.config, args.set, args.pairs)
    elif args.model and args.src and args.tgt:
        v = load(args.model, "cpu").loaded
        model = v.model
        src = [v.src_vocab.encode(s) for s in Path(args.src).read_text(encoding="utf-8").splitlines()]
        tgt = [v.tgt_vocab.encode(t) for t in Path(args.tgt).read_text(encoding="utf-8").splitlines()]
    else:
        raise SystemExit("error: give --model with --src and --tgt, or --config")
    if len(src) != len(tgt):
        raise SystemExit(f"error: {len(src)} source lines but {len(tgt)} target lines")
    ways = {"step by step": lambda: [fd.token_log_probs for fd in forced_decode(model, src, tgt, args.batch_tokens)],
            "one pass": lambda: forced_log_probs(model, src, tgt, args.batch_tokens)}
    times = {name: [] for name in ways}
    out = {}
    for _ in range(args.rounds):
        for name, fn in ways.items():
            t0 = time.perf_counter()
            out[name] = fn()
            times[name].append(time.perf_counter() - t0)
    diff = max(float(abs(a - b).max()) for a, b in zip(out["step by step"], out["one pass"]))
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"{len(src)} pairs, {sum(len(t) + 1 for t in tgt)} target tokens, {args.threads} threads, "
          f"median of {args.rounds}")
    for name in ways:
        print(f"  {name}: {med[name]:.2f} s ({', '.join(f'{t:.2f}' for t in times[name])})")
    print(f"  speed-up {med['step by step'] / med['one pass']:.2f}x; largest log-probability difference {diff:.2e}")


if __name__ == "__main__":
    main()
