"""rnmt translate --model DIR_OR_CHECKPOINT [--model ...] [--input FILE] [--output FILE] [--beam N] ...

Several ``--model`` options decode with the ensemble of those models (the mean of their
log-probabilities at every step); they must share their vocabularies.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from rnmt.data import read_lines
from rnmt.errors import UserError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action="append",
                   help="training output directory or checkpoint file; repeat it to decode with an ensemble")
    p.add_argument("--input", help="source text, one segment per line (default: stdin)")
    p.add_argument("--output", help="where to write translations (default: stdout)")
    p.add_argument("--beam", type=int, help="beam size (default from the model's config; 1 = greedy)")
    p.add_argument("--greedy", action="store_true", help="greedy search")
    p.add_argument("--alpha", type=float, help="GNMT length penalty exponent")
    p.add_argument("--normalize", choices=["gnmt", "length", "none"], help="length normalisation of scores")
    p.add_argument("--nbest", type=int, help="print the N best translations as 'i ||| text ||| score'")
    p.add_argument("--max-len-ratio", type=float, help="output length limit as a multiple of the input length")
    p.add_argument("--batch-tokens", type=int, help="source tokens per decoding batch")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--int8", action="store_true",
                   help="decode with int8 matrix products (CPU; rnmt/int8.py, docs/performance.md)")
    p.add_argument("--threads", type=int, help="CPU threads")
    p.add_argument("--speed", action="store_true", help="report sentences/s and words/s on stderr")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import load

    for name in ("beam", "nbest", "batch_tokens"):  # before the model loads, in option terms
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load(args.model, args.device, int8=args.int8)  # several paths: an ensemble
    lines = read_lines(args.input)
    nbest = args.nbest or 1
    start = time.perf_counter()
    results = model.translate(lines, beam=args.beam, nbest=nbest, alpha=args.alpha, greedy=args.greedy,
                              normalize=args.normalize, max_len_ratio=args.max_len_ratio,
                              batch_tokens=args.batch_tokens)
    seconds = time.perf_counter() - start
    best = [hyps[0].text for hyps in results] if nbest > 1 else results
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for i, result in enumerate(results):
            if nbest > 1:
                for h in result:
                    out.write(f"{i} ||| {h.text} ||| {h.score:.4f}\n")
            else:
                out.write(result + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if args.speed:
        words = sum(len(text.split()) for text in best)
        print(f"translated {len(lines)} sentences, {words} words in {seconds:.2f} s: "
              f"{len(lines) / max(seconds, 1e-9):.1f} sentences/s, {words / max(seconds, 1e-9):.1f} words/s",
              file=sys.stderr)
    return 0
