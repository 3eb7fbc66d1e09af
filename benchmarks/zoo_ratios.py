"""Speed ratios between the papers' architectures, in one process, on the same batches.

    python -m benchmarks.zoo_ratios                         # 256/512, 2 threads, sample corpus
    python -m benchmarks.zoo_ratios --dims 128,256 --threads 1 --rounds 3

Each comparison trains both systems of a pair on the same token batches of the bundled
sample corpus (fresh models, full optimiser steps, real target tokens per second), taking
turns A, B, A, B, ... so that a change in machine load hits both; the table gives the
median over rounds. Training FLOPs per target token are counted by PyTorch's FLOP counter
(matrix products only: element-wise work is not counted) on one batch, forward + backward.

Decoding (beam search over the first test sentences) uses fresh models too. An untrained
model seldom ends a sentence, so nearly every hypothesis runs to the length limit: output
tokens per second then measures the cost of one search step, which is what an
architecture changes. For sentences per second on real translations, pass trained models
with --decode-models (e.g. the checkpoints `rnmt reproduce` leaves in results/*/runs/).

The pairs and the targets they are read against (see docs/cpu-speed.md, "The targets"):
  ATR vs GRU in RNNSearch, training            ATR paper: 1.26x; target >= 1.3x
  DTMT#4 vs ShallowRNMT, training              slowdown no worse than the FLOPs ratio
  Cseq2seq-I (LS) vs RNNSearch, decoding       Cseq2seq paper ~0.3x; target >= 0.5x
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import torch
from torch.utils.flop_counter import FlopCounterMode

from rnmt import products
from rnmt.bench.throughput import decode_throughput, train_throughput
from rnmt.config import load_config
from rnmt.data import collate
from rnmt.search.translator import Translator
from rnmt.training.loss import label_smoothed_nll
from rnmt.training.trainer import Trainer

REPO = Path(__file__).resolve().parents[1]
PAIRS = [  # (name, baseline config, compared config, what is timed)
    ("ATR vs GRU (RNNSearch)", "configs/papers/atr/rnnsearch-gru.yaml", "configs/papers/atr/rnnsearch-atr.yaml",
     "train"),
    ("DTMT#4 vs ShallowRNMT", "configs/papers/dtmt/shallow-rnmt.yaml", "configs/papers/dtmt/dtmt4.yaml", "train"),
    ("Cseq2seq-I (LS) vs RNNSearch", "configs/papers/cseq2seq/rnnsearch.yaml",
     "configs/papers/cseq2seq/cseq2seq1-ls.yaml", "decode"),
]


def shared_vocabulary(args, work: Path) -> Path:
    from rnmt.data import train_vocabs

    train_vocabs(REPO / "data/sample/train.es", REPO / "data/sample/train.en", work / "vocab", joint=True,
                 model_type="bpe", src_size=args.vocab_size, tgt_size=args.vocab_size, seed=1)
    return work / "vocab" / "spm.model"


def system(config: str, args, vocab: Path, work: Path):
    """Model, corpus and vocabularies of one paper config at the benchmark's size."""
    E, H = args.dims
    overrides = [f"model.emb_size={E}", f"model.hidden_size={H}", f"data.batch_tokens={args.batch_tokens}",
                 "data.train=data/sample/train", "data.dev=null", "data.test=data/sample/test",
                 "data.src=es", "data.tgt=en", f"data.cache_dir={work / 'cache'}",
                 f"data.vocab.model={vocab}", f"train.threads={args.threads}", "train.device=cpu", "train.seed=1"]
    cfg = load_config(str(REPO / config), overrides)
    # Paper vocabulary sizes are in the configs; the benchmark uses its own shared vocabulary.
    cfg.model.src_vocab_size = cfg.model.tgt_vocab_size = None
    setup = Trainer(cfg, work / Path(config).stem, log=lambda *_: None)
    return cfg, setup


def first_batch_step(cfg, setup):
    """One training forward + backward on the sampler's first batch (gradients cleared
    afterwards), and that batch's real target tokens."""
    from rnmt.data import TokenBatchSampler

    sampler = TokenBatchSampler(setup.corpus.src_lens, setup.corpus.tgt_lens, cfg.data.batch_tokens, seed=1)
    batch = collate(setup.corpus, next(iter(sampler)), setup.device)
    model = setup.model.train()

    def step() -> None:
        logits = model(batch.src, batch.src_mask, batch.tgt_in)
        loss, _ = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, cfg.train.label_smoothing)
        loss.backward()
        model.zero_grad(set_to_none=True)

    return step, batch.ntokens


def flops_per_token(cfg, setup) -> float:
    """Matrix-product FLOPs of one forward + backward pass, per real target token. Counted
    with plain autograd and PyTorch's products: the deferred weight gradients
    (rnmt/deferred_grads.py) do the same products through in-place ``addmm_``, and oneDNN's
    (rnmt/products.py) bypass the dispatcher, and the FLOP counter sees neither."""
    from rnmt import deferred_grads

    step, ntokens = first_batch_step(cfg, setup)
    with deferred_grads.enabled(False), products.use(False), FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops() / ntokens


PRODUCTS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::addmm_",
            "aten::baddbmm_", products.PROFILE_NAME, "mkldnn::_linear_pointwise"}
NORMS = {"aten::native_layer_norm", "aten::native_layer_norm_backward"}
# The units' fused element-wise steps (rnmt/kernels/gru_gates.cpp, ln_gates.cpp; the layer
# norm of the layer-normalised units runs inside them) and the attention-score kernel.
UNIT_KERNELS = {"_FusedGates", "_FusedGatesBackward", "_LNGates", "_LNGatesBackward"}
SCORE_KERNEL = {"_FusedAdditiveScores", "_FusedAdditiveScoresBackward"}


def step_profile(cfg, setup, top: int = 8) -> Dict[str, object]:
    """Where one training step (forward + backward, first batch) spends its time: the shares
    of matrix products, the fused kernels, layer normalisation outside them and everything
    else, and the costliest ops."""
    from torch.profiler import ProfilerActivity, profile

    step, _ = first_batch_step(cfg, setup)
    step()  # warm-up: allocator, kernel build
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    share = lambda names: sum(e.self_cpu_time_total for e in events if e.key in names) / total  # noqa: E731
    ranked = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    return {"products": share(PRODUCTS), "layer_norm": share(NORMS), "unit_kernels": share(UNIT_KERNELS),
            "score_kernel": share(SCORE_KERNEL),
            "top": [(e.key, e.self_cpu_time_total / total, e.count) for e in ranked]}


def decode_cost(translator, sources: List[str], beam: int, top: int = 8) -> Dict[str, object]:
    """Matrix-product FLOPs per output token of one beam search over ``sources`` (PyTorch's
    FLOP counter; the C++ attention kernel's work is not counted) and a profile of another:
    the share of CPU time in matrix products and the costliest operations."""
    from torch.profiler import ProfilerActivity, profile

    with torch.inference_mode():
        with products.use(False), FlopCounterMode(display=False) as counter:
            results = translator.translate(sources, beam=beam)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            translator.translate(sources, beam=beam)
    out_tokens = sum(len(r[0].tokens) + 1 for r in results)
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    ranked = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    return {"mflop_per_token": counter.get_total_flops() / out_tokens / 1e6,
            "products": sum(e.self_cpu_time_total for e in events if e.key in PRODUCTS) / total,
            "top": [(e.key, e.self_cpu_time_total / total, e.count) for e in ranked]}


def alternating_rates(setup, cfg, args, switch) -> Dict[bool, List[float]]:
    """Training target tokens/s of one system with ``switch(False)`` and ``switch(True)`` (each
    a context manager: a way of computing to compare) in ``args.rounds`` alternating rounds
    of ``args.steps`` updates after ``args.warmup``, the same batches each time."""
    rates: Dict[bool, List[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for on in (False, True):
            with switch(on):
                torch.manual_seed(1)
                r = train_throughput(setup.model, setup.corpus, cfg, args.steps, args.warmup, setup.device)
            rates[on].append(r["train_tokens_per_s"])
    return rates


def compare_training(a, b, args) -> Dict[str, float]:
    speeds: Dict[str, List[float]] = {"a": [], "b": []}
    for _ in range(args.rounds):
        for key, (cfg, setup) in (("a", a), ("b", b)):
            torch.manual_seed(1)
            r = train_throughput(setup.model, setup.corpus, cfg, args.steps, args.warmup, setup.device)
            speeds[key].append(r["train_tokens_per_s"])
    ta, tb = statistics.median(speeds["a"]), statistics.median(speeds["b"])
    fa, fb = flops_per_token(*a), flops_per_token(*b)
    return {"a_tok_s": ta, "b_tok_s": tb, "speed_ratio": tb / ta, "a_mflop_tok": fa / 1e6, "b_mflop_tok": fb / 1e6,
            "flops_ratio": fb / fa, "rounds_a": speeds["a"], "rounds_b": speeds["b"]}


def compare_decoding(a, b, args, models: Optional[List[str]]) -> Dict[str, float]:
    from rnmt.data import read_lines
    from rnmt.models import load_model

    sources = [s for s in read_lines(REPO / "data/sample/test.es") if s.strip()][: args.decode_sentences]
    translators = []
    for i, (cfg, setup) in enumerate((a, b)):
        if models:
            loaded = load_model(models[i], setup.device)
            translators.append(Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search,
                                          setup.device))
        else:
            setup.model.eval()
            translators.append(Translator(setup.model, setup.src_vocab, setup.tgt_vocab, cfg.search, setup.device))
    rounds: Dict[str, List[dict]] = {"a": [], "b": []}
    for _ in range(args.rounds):
        for key, tr in zip(("a", "b"), translators):
            with torch.inference_mode():
                rounds[key].append(decode_throughput(tr, sources, args.beam))

    def med(key, field):
        return statistics.median(r[field] for r in rounds[key])

    extra = {}
    if args.profile:
        costs = [decode_cost(tr, sources, args.beam) for tr in translators]
        extra = {"a_mflop_tok": costs[0]["mflop_per_token"], "b_mflop_tok": costs[1]["mflop_per_token"],
                 "flops_ratio": costs[1]["mflop_per_token"] / costs[0]["mflop_per_token"],
                 "profile": {"baseline": costs[0], "compared": costs[1]}}
    return {**extra, "a_sent_s": med("a", "decode_sentences_per_s"), "b_sent_s": med("b", "decode_sentences_per_s"),
            "a_tok_s": med("a", "decode_tokens_per_s"), "b_tok_s": med("b", "decode_tokens_per_s"),
            "sent_ratio": med("b", "decode_sentences_per_s") / med("a", "decode_sentences_per_s"),
            "tok_ratio": med("b", "decode_tokens_per_s") / med("a", "decode_tokens_per_s"),
            "trained": bool(models)}


def main() -> int:
    p = argparse.ArgumentParser(description="speed ratios between the papers' architectures")
    p.add_argument("--dims", default="256,512", help="embedding,hidden size (default 256,512)")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--batch-tokens", type=int, default=4000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10, help="timed training steps per round")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--decode-sentences", type=int, default=50)
    p.add_argument("--decode-models", nargs=2, metavar=("RNNSEARCH", "CSEQ2SEQ1"),
                   help="trained checkpoints for the decoding pair (else fresh models)")
    p.add_argument("--pairs", default="all", help="comma-separated indices into the pair list (0,1,2) or all")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--profile", action="store_true",
                   help="also profile one training step (training pairs) or one beam search (decoding pair) of "
                        "each system, and count the decoding FLOPs per output token")
    args = p.parse_args()
    args.dims = tuple(int(x) for x in args.dims.split(","))
    torch.set_num_threads(args.threads)
    chosen = range(len(PAIRS)) if args.pairs == "all" else [int(i) for i in args.pairs.split(",")]
    results = {}
    with tempfile.TemporaryDirectory(prefix="rnmt-zoo-") as tmp:
        work = Path(tmp)
        vocab = shared_vocabulary(args, work)
        for i in chosen:
            name, base, other, kind = PAIRS[i]
            a, b = system(base, args, vocab, work), system(other, args, vocab, work)
            r = compare_training(a, b, args) if kind == "train" else compare_decoding(a, b, args, args.decode_models)
            if args.profile and kind == "train":
                r["profile"] = {Path(base).stem: step_profile(*a), Path(other).stem: step_profile(*b)}
            results[name] = {"kind": kind, **r}
            print(json.dumps({name: results[name]}), flush=True)
    E, H = args.dims
    print(f"\n{E}/{H} dims, {args.vocab_size} joint BPE, batches of {args.batch_tokens} tokens, "
          f"{args.threads} threads, "
          f"median of {args.rounds} alternating rounds; load average "
          + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    print("| comparison | measured | baseline | compared | speed ratio | FLOPs ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for name, r in results.items():
        if r["kind"] == "train":
            print(f"| {name} | training target tok/s | {r['a_tok_s']:.0f} | {r['b_tok_s']:.0f} | "
                  f"{r['speed_ratio']:.2f}x (time {1 / r['speed_ratio']:.2f}x) | {r['flops_ratio']:.2f}x "
                  f"({r['a_mflop_tok']:.1f} -> {r['b_mflop_tok']:.1f} MFLOP/tok) |")
        else:
            what = "trained models" if r["trained"] else "fresh models"
            flops = (f"{r['flops_ratio']:.2f}x ({r['a_mflop_tok']:.1f} -> {r['b_mflop_tok']:.1f} MFLOP/tok)"
                     if "flops_ratio" in r else "")
            print(f"| {name} | decoding output tok/s, beam {args.beam} ({what}) | {r['a_tok_s']:.1f} | "
                  f"{r['b_tok_s']:.1f} | "
                  f"{r['tok_ratio']:.2f}x | {flops} |")
            print(f"| {name} | decoding sentences/s ({what}) | {r['a_sent_s']:.2f} | {r['b_sent_s']:.2f} | "
                  f"{r['sent_ratio']:.2f}x | |")
    for name, r in results.items():
        for system_name, prof in r.get("profile", {}).items():
            if r["kind"] == "train":
                print(f"\n{name}: one training step of {system_name}, share of CPU time: matrix products "
                      f"{prof['products']:.0%}, the units' fused element-wise steps {prof['unit_kernels']:.0%}, "
                      f"attention-score kernel {prof['score_kernel']:.0%}, layer normalisation outside them "
                      f"{prof['layer_norm']:.0%}, other "
                      f"{1 - prof['products'] - prof['unit_kernels'] - prof['score_kernel'] - prof['layer_norm']:.0%}")
            else:
                print(f"\n{name}: one beam search of the {system_name} system, {prof['mflop_per_token']:.1f} matrix "
                      f"MFLOP per output token, share of CPU time: matrix products {prof['products']:.0%}")
            for op, frac, count in prof["top"]:
                print(f"  {frac:6.1%}  {op} (x{count})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
