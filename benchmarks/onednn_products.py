"""fp32 CPU products through PyTorch's BLAS against oneDNN (rnmt/products.py), in one process.

    python -m benchmarks.onednn_products                          # shapes + training, 2 threads
    python -m benchmarks.onednn_products --decode-models RUN/best.safetensors [...]

Three tables, each alternating the two ways round by round (median of ``--rounds``):
1. GFLOP/s of the products rnmt makes at the peer size (256/512, about 30 rows per step):
   ``torch.mm`` (the BLAS), oneDNN on the plain matrix (`products.mm`) and on a packed one
   (`products.packed_product`, as the training step products use).
2. Training target tokens/s of the papers' configs at 256/512 on the sample corpus
   (``train_throughput``: plain fp32 Adam updates), ``products.use(False)`` against ``True``.
3. With ``--decode-models``: beam-5 sentences/s of trained checkpoints on the sample test
   set at ``--decode-threads``, and whether the two ways give the same translations.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from rnmt import products

SHAPES = [  # (what, rows, inner, columns)
    ("GRU recurrent product, a step", 30, 512, 1536),
    ("its input gradient, a step", 30, 1536, 512),
    ("conditional GRU's second unit, a step", 30, 1024, 1536),
    ("output layer, a batch", 1000, 512, 8000),
    ("output layer's input gradient", 1000, 8000, 512),
    ("a weight gradient over all steps", 512, 1000, 1536),
    ("square", 1024, 1024, 1024),
]
CONFIGS = ["configs/papers/atr/rnnsearch-gru.yaml", "configs/papers/dtmt/shallow-rnmt.yaml",
           "configs/papers/dtmt/dtmt4.yaml"]


def timed(run, seconds: float = 0.3) -> float:
    """Seconds per call of ``run`` (after a warm-up call), over about ``seconds``."""
    run()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run()
        calls += 1
    return (time.perf_counter() - start) / calls


def shape_table(rounds: int) -> None:
    print("| product | shape | BLAS GFLOP/s | oneDNN | oneDNN, packed matrix |\n|---|---|---:|---:|---:|")
    for what, m, k, n in SHAPES:
        a, b = torch.randn(m, k), torch.randn(k, n)
        with products.use(True):  # pack() gives None where the automatic choice kept the BLAS
            packed = products.pack(b, m)
        ways = {"blas": lambda a=a, b=b: torch.mm(a, b), "onednn": lambda a=a, b=b: products.mm(a, b),
                "packed": lambda a=a, packed=packed: products.packed_product(a, packed)}
        best = {name: [] for name in ways}
        with products.use(True):
            for _ in range(rounds):
                for name, run in ways.items():
                    best[name].append(2 * m * k * n / timed(run) / 1e9)
        rate = {name: statistics.median(v) for name, v in best.items()}
        print(f"| {what} | {m} x {k} x {n} | {rate['blas']:.0f} | {rate['onednn']:.0f} | {rate['packed']:.0f} |")


def training_table(args) -> None:
    from benchmarks import zoo_ratios

    settings = argparse.Namespace(dims=(256, 512), batch_tokens=args.batch_tokens, threads=args.threads,
                                  vocab_size=8000, rounds=args.rounds, steps=args.steps, warmup=args.warmup)
    print("\n| config (256/512) | BLAS tok/s | oneDNN tok/s | speed-up |\n|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="onednn-") as tmp:
        work = Path(tmp)
        vocab = zoo_ratios.shared_vocabulary(settings, work)
        for config in args.configs:
            cfg, setup = zoo_ratios.system(config, settings, vocab, work)
            rates = zoo_ratios.alternating_rates(setup, cfg, settings, products.use)
            off, on = statistics.median(rates[False]), statistics.median(rates[True])
            print(f"| {Path(config).stem} | {off:.0f} | {on:.0f} | {on / off:.2f}x |", flush=True)


def decoding_table(args) -> None:
    from rnmt.data import read_lines
    from rnmt.models import load_model
    from rnmt.search.translator import Translator

    torch.set_num_threads(args.decode_threads)
    root = Path(__file__).resolve().parents[1]
    sources = [s for s in read_lines(root / "data/sample/test.es") if s.strip()][: args.decode_sentences]
    print(f"\n| model ({args.decode_threads} thread(s), beam 5, {len(sources)} sentences) | BLAS sent/s | oneDNN "
          "sent/s | speed-up | same translations |\n|---|---:|---:|---:|---:|")
    for path in args.decode_models:
        loaded = load_model(path, torch.device("cpu"))
        translator = Translator(loaded.model.eval(), loaded.src_vocab, loaded.tgt_vocab, loaded.config.search,
                                torch.device("cpu"))
        rates, texts = {False: [], True: []}, {}
        for _ in range(args.rounds):
            for on in (False, True):
                with products.use(on), torch.inference_mode():
                    start = time.perf_counter()
                    results = translator.translate(sources, beam=5)
                    rates[on].append(len(sources) / (time.perf_counter() - start))
                texts[on] = [r[0].text for r in results]
        off, on = statistics.median(rates[False]), statistics.median(rates[True])
        same = sum(a == b for a, b in zip(texts[False], texts[True]))
        print(f"| {path} | {off:.1f} | {on:.1f} | {on / off:.2f}x | {same} / {len(sources)} |", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description="fp32 CPU products: PyTorch's BLAS against oneDNN")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", nargs="*", default=CONFIGS, help="training configs (none: skip training)")
    p.add_argument("--batch-tokens", type=int, default=2000)
    p.add_argument("--steps", type=int, default=3, help="timed training updates per round")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--decode-models", nargs="*", default=[], help="trained checkpoints to decode")
    p.add_argument("--decode-threads", type=int, default=1)
    p.add_argument("--decode-sentences", type=int, default=100)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if not products.speedup():
        print("oneDNN products are unavailable here (no C++ kernels or no oneDNN)", file=sys.stderr)
        return 1
    print(f"{args.threads} thread(s); oneDNN / BLAS on one thread at a unit's product: {products.speedup():.2f}x "
          f"(on under the automatic choice: {products.speedup() >= products.MIN_SPEEDUP})\n")
    shape_table(args.rounds)
    if args.configs:
        training_table(args)
    if args.decode_models:
        decoding_table(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
