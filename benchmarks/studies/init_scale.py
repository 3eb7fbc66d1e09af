"""Study. Question: Why does RNNSearch-GRU sit on the unigram plateau for hundreds of updates, and does a larger
uniform init scale help?
Measured at: 246dd95.
Answer: from U(±0.08) the decoder states saturate and the model ignores its source; from U(±0.15)
nothing saturates and perplexity falls from the first updates (the quickstart: 22.78 test BLEU
after 800 updates against 14.25, at 6320902); the quickstart and the peer config start from
U(±0.15) (docs/time-to-quality.md, "Starting out of the plateau: the initial scale").

How soon RNNSearch-GRU leaves the unigram plateau, for several uniform init scales.

Trains the peer-comparison model (benchmarks/configs/rnnsearch-gru.yaml: Adam 1e-3 from
the first update, label smoothing 0.1, dropout 0.1) for a few hundred updates once per
``--scales`` value and ``--seeds`` value, on the data that benchmarks/prepare.py writes, and
prints its training perplexity at every logging point. Runs with the same seed see the same
batches in the same order, so their scales differ only in the starting weights; a second
seed shows whether a difference is more than one lucky start.

    python -m benchmarks.studies.init_scale --scales 0.08 0.1 0.15 --seeds 1 2 --steps 120
    python -m benchmarks.studies.init_scale --prepared runs/peers-benchmark/data --threads 2

The unigram perplexity of the training targets is printed for reference: a model whose
perplexity sits near it has learned word frequencies and nothing else yet. After training,
each model is probed on the first 40 dev pairs: how many units of its initial decoder state
and of its decoder states are saturated (|s| > 0.95), how much the initial state differs
between sentences, and how much its loss grows when every target is paired with the previous
sentence's source (near zero: the decoder ignores the source).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

from benchmarks import REPO
from benchmarks.prepare import DEFAULT_DATA, prepare

CONFIG = REPO / "benchmarks" / "configs" / "rnnsearch-gru.yaml"


def unigram_perplexity(spm_model: Path, targets: Path) -> float:
    """exp of the entropy of the target pieces' frequencies (``</s>`` counted once per line)."""
    from rnmt.data import load_vocab

    lines = [line.strip() for line in targets.read_text(encoding="utf-8").splitlines()]
    counts: Counter = Counter()
    for ids in load_vocab(spm_model).encode_batch(lines):
        counts.update(ids)
    counts["</s>"] += len(lines)
    total = sum(counts.values())
    return math.exp(-sum(c / total * math.log(c / total) for c in counts.values()))


def train_curve(prepared: Path, out: Path, scale: float, seed: int, steps: int, log_every: int,
                threads: int, extra: List[str]) -> Dict[int, float]:
    """Train one scale; {update: training perplexity over the last logging window}."""
    cmd = [sys.executable, "-m", "rnmt", "train", str(CONFIG), "--out", str(out),
           "--set", f"data.train={prepared / 'raw' / 'train'}", "--set", "data.dev=null",
           "--set", f"data.vocab.model={prepared / 'spm.model'}",
           "--set", f"train.init_scale={scale}", "--set", f"train.seed={seed}",
           "--set", f"train.max_steps={steps}",
           "--set", f"train.log_every={log_every}", "--set", f"train.threads={threads}",
           "--set", "train.keep_last=1"]
    for item in extra:
        cmd += ["--set", item]
    curve = read_curve(out)
    if max(curve, default=0) < steps or not (out / "best.safetensors").is_file():
        # A finished run of the same output directory is reused (probe it again for free).
        subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        curve = read_curve(out)
    return curve


def read_curve(out: Path) -> Dict[int, float]:
    """{update: training perplexity} from a run's log.jsonl (empty when there is none)."""
    log = out / "log.jsonl"
    if not log.is_file():
        return {}
    curve = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "ppl" in record and "step" in record:
            curve[int(record["step"])] = float(record["ppl"])
    return curve


def probe(run_dir: Path, prepared: Path, pairs: int = 40) -> Dict[str, float]:
    """Saturation and source use of the RNNSearch model trained in ``run_dir``."""
    import numpy as np
    import torch

    from rnmt.data import make_translation_batches, pad_sequences
    from rnmt.data.vocab import BOS_ID
    from rnmt.models.loading import load_model
    from rnmt.search.forced import forced_decode

    loaded = load_model(run_dir)
    model = loaded.model
    read = lambda side: (prepared / "raw" / f"dev.{side}").read_text(encoding="utf-8").splitlines()[:pairs]  # noqa: E731
    sources, targets = loaded.src_vocab.encode_batch(read("src")), loaded.tgt_vocab.encode_batch(read("tgt"))

    def mean_nll(srcs) -> float:
        scored = forced_decode(model, srcs, targets, batch_tokens=10 ** 9)
        return -float(np.concatenate([f.token_log_probs for f in scored]).mean())

    # Each target paired with the previous sentence's source.
    source_gain = mean_nll(sources[-1:] + sources[:-1]) - mean_nll(sources)
    idx, src, src_mask = next(make_translation_batches(sources, 10 ** 9))
    tgt_in = torch.from_numpy(pad_sequences([np.asarray(targets[i], dtype=np.int64) for i in idx], prefix=BOS_ID))
    real = torch.from_numpy(pad_sequences([np.ones(len(targets[i]) + 1, dtype=np.int64) for i in idx])) > 0
    with torch.no_grad():
        trace = model.decoder_trace(src, src_mask, tgt_in)
    s0, states = trace["s0"], trace["unit2.state"][real]
    return {"s0_saturated": float((s0.abs() > 0.95).float().mean()),
            "s0_spread": float(s0.std(0).mean()),
            "states_saturated": float((states.abs() > 0.95).float().mean()),
            "source_gain": source_gain}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", type=float, nargs="+", default=[0.08, 0.1, 0.15])
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--steps", type=int, default=160)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prepared", type=Path, help="a directory written by benchmarks/prepare.py "
                   "(default: prepare the Bible corpus under --out)")
    p.add_argument("--data", type=Path, default=Path(DEFAULT_DATA), help="the shared data directory")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "init-scale")
    p.add_argument("--set", dest="extra", action="append", default=[],
                   help="another config override for every run, e.g. train.lr=0.002")
    args = p.parse_args()

    prepared = args.prepared or args.out / "data"
    if args.prepared is None:
        prepare(args.data, prepared)
    unigram = unigram_perplexity(prepared / "spm.model", prepared / "raw" / "train.tgt")
    runs = [(scale, seed) for seed in args.seeds for scale in args.scales]
    curves = {}
    for scale, seed in runs:
        print(f"init U(-{scale:g}, {scale:g}), seed {seed}: training {args.steps} updates ...", flush=True)
        curves[scale, seed] = train_curve(prepared, args.out / f"scale-{scale:g}-seed-{seed}", scale, seed,
                                          args.steps, args.log_every, args.threads, args.extra)
    steps = sorted(set().union(*curves.values()))
    print(f"\ntraining perplexity (unigram perplexity of the targets: {unigram:.0f})\n")
    print("| update | " + " | ".join(f"U(±{scale:g}) seed {seed}" for scale, seed in runs) + " |")
    print("|---:|" + "---:|" * len(runs))
    for step in steps:
        cells = [f"{curves[run][step]:.0f}" if step in curves[run] else "-" for run in runs]
        print(f"| {step} | " + " | ".join(cells) + " |")
    print(f"\nafter {args.steps} updates, on the first 40 dev pairs\n")
    print("| init | seed | s_0 units saturated | s_0 spread between sentences | decoder states saturated "
          "| loss increase, source of the previous sentence (nats) |")
    print("|---|---:|---:|---:|---:|---:|")
    for scale, seed in runs:
        found = probe(args.out / f"scale-{scale:g}-seed-{seed}", prepared)
        print(f"| U(±{scale:g}) | {seed} | {found['s0_saturated']:.0%} | {found['s0_spread']:.3f} "
              f"| {found['states_saturated']:.0%} | {found['source_gain']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
