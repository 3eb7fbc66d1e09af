"""How much gradient reaches each part of a model: at initialisation and at trained checkpoints.

    python -m benchmarks.gradient_flow --vocab results/dtmt-converged/runs/vocab/spm.model \
        [--systems shallow-rnmt dtmt1 dtmt4] [--checkpoint dtmt4@1000=PATH ...] [--batches 8] \
        [--out results/dtmt-converged/gradient_flow.json] [--set KEY=VALUE --tag +NAME]

For each DTMT-table system (its paper config at 256/256, the family recipe's U(±0.15)
initialisation and label smoothing, seed 1), the norm of the loss gradient (per target token)
is measured on the first ``--batches`` training batches of the Bible corpus, as the
reproduction's sampler orders them (3,000 tokens each), in eval mode so that dropout does
not blur the comparison. Each ``--checkpoint NAME=PATH`` adds a trained model (a
``ckpt-<step>.safetensors`` or a run directory) measured on the same batches.

It reports, per model, the gradient norm of every module (the parameters' names without
the last component: ``encoder.fwd.transitions.2``, ``attention``, ...), and four headline
figures: the source embeddings (everything the source side learns passes through them),
the attention, the encoder and the decoder. The question it answers is docs/results.md's:
does a deep transition damp the gradient that reaches the source side, and by how much,
before and after training? It measures; it does not train.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List

import torch

REPO = Path(__file__).resolve().parent.parent

HEADLINES = {"source embeddings": ("src_embed",), "attention": ("attention",),
             "encoder": ("encoder",), "decoder": ("decoder", "query_transition", "readout", "output", "tgt_embed")}


def module_norms(model: torch.nn.Module) -> Dict[str, float]:
    """Squared gradient norms summed per module, in the order of the parameters."""
    sums: Dict[str, float] = OrderedDict()
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        module = name.rsplit(".", 1)[0] if "." in name else name
        sums[module] = sums.get(module, 0.0) + float(p.grad.detach().double().pow(2).sum())
    return sums


def headline(sums: Dict[str, float]) -> Dict[str, float]:
    out = {}
    for label, prefixes in HEADLINES.items():
        out[label] = math.sqrt(sum(v for k, v in sums.items() if k.split(".")[0].startswith(prefixes)))
    return out


def measure(model, batches, label_smoothing: float) -> Dict[str, object]:
    """Mean over ``batches`` of the per-module gradient norms of the per-token loss."""
    from rnmt.training.loss import label_smoothed_nll

    model.eval()  # no dropout: the gradient of the function itself
    per_batch: List[Dict[str, float]] = []
    for batch in batches:
        model.zero_grad(set_to_none=True)
        logits = model(batch.src, batch.src_mask, batch.tgt_in)
        loss, _ = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, label_smoothing)
        (loss / batch.ntokens).backward()
        per_batch.append(module_norms(model))
    modules = list(per_batch[0])
    mean_sq = {m: sum(b.get(m, 0.0) for b in per_batch) / len(per_batch) for m in modules}
    heads = [headline(b) for b in per_batch]
    return {"modules": {m: math.sqrt(v) for m, v in mean_sq.items()},
            "headline": {k: sum(h[k] for h in heads) / len(heads) for k in HEADLINES}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", required=True, help="the reproduction's joint sentencepiece model")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "bible-es-en"),
                    help="corpus directory with train.es / train.en")
    ap.add_argument("--systems", nargs="*", default=["shallow-rnmt", "dtmt1", "dtmt4"],
                    help="paper configs of configs/papers/dtmt/ measured at initialisation")
    ap.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                    help="a trained checkpoint (file or run directory) to measure as well")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override for every --systems model, e.g. model.options.carry_bias=2")
    ap.add_argument("--tag", default="", help="appended to the --systems models' names (e.g. +carry2)")
    ap.add_argument("--dims", default="256,256")
    ap.add_argument("--init-scale", type=float, default=0.15)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--batch-tokens", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()

    from rnmt.config import load_config
    from rnmt.data import TokenBatchSampler, collate, encode_corpus, load_vocab
    from rnmt.models import build_model, load_model
    from rnmt.models.base import uniform_init_

    torch.set_num_threads(args.threads)
    emb, hidden = (int(x) for x in args.dims.split(","))
    vocab = load_vocab(args.vocab)
    data = Path(args.data)
    with tempfile.TemporaryDirectory() as cache:
        corpus = encode_corpus(data / "train.es", data / "train.en", vocab, vocab, cache, 80)
        sampler = TokenBatchSampler(corpus.src_lens, corpus.tgt_lens, args.batch_tokens, shuffle=True,
                                    seed=args.seed)
        batches = []
        for indices in sampler:
            batches.append(collate(corpus, indices, torch.device("cpu")))
            if len(batches) == args.batches:
                break

    results: Dict[str, Dict[str, object]] = {}
    for system in args.systems:
        cfg = load_config(REPO / "configs" / "papers" / "dtmt" / f"{system}.yaml",
                          [f"model.emb_size={emb}", f"model.hidden_size={hidden}", *args.set])
        torch.manual_seed(args.seed)
        model = build_model(cfg.model, vocab.size, vocab.size)
        uniform_init_(model, args.init_scale)
        results[f"{system}{args.tag}@0"] = measure(model, batches, args.label_smoothing)
    for item in args.checkpoint:
        name, _, path = item.partition("=")
        loaded = load_model(path, "cpu")
        results[name] = {**measure(loaded.model, batches, args.label_smoothing), "step": loaded.meta.get("step")}

    names = list(results)
    print("| model | " + " | ".join(HEADLINES) + " |")
    print("|---|" + "---:|" * len(HEADLINES))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{results[name]['headline'][k]:.4f}" for k in HEADLINES) + " |")
    if args.out:
        record = {"command": "python -m benchmarks.gradient_flow " + " ".join(sys.argv[1:]),
                  "batches": args.batches, "batch_tokens": args.batch_tokens, "init_scale": args.init_scale,
                  "dims": [emb, hidden], "results": results}
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
