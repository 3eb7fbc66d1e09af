"""rnmt shortlist --model M --src S --tgt T --out FILE [--iterations N] [--keep K] [--min-prob P]

Builds a lexical shortlist for ``rnmt translate --shortlist`` (`rnmt.search.shortlist`): IBM
Model 1's p(t | s) between the model's subwords, estimated by EM on a parallel corpus
encoded with the model's own vocabularies (`rnmt.data.lexicon`), keeping each source
subword's ``--keep`` most probable translations and the 1,000 most frequent target
subwords. Use the corpus the model was trained on (for a distilled student, its distilled
corpus). The file is written atomically.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rnmt.commands import checks
from rnmt.errors import UserError
from rnmt.search.shortlist import BUILD_ITERATIONS, BUILD_KEEP, BUILD_MIN_PROB
from rnmt_runtime.shortlist import add_arguments as add_shortlist_arguments


def add_use_arguments(p: argparse.ArgumentParser, sampling: str) -> None:
    """``--shortlist FILE`` and ``--shortlist-sizes FREQUENT BEST`` for a command that
    searches (translate, serve); ``sampling`` says what becomes of sampling there."""
    add_shortlist_arguments(p, sampling)


def check_use_arguments(args: argparse.Namespace) -> None:
    """`add_use_arguments`' values, before any file or model is read."""
    frequent, best = args.shortlist_sizes
    if min(frequent, best) < 0:
        raise UserError(f"--shortlist-sizes must be at least 0, got {frequent} {best}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action=checks.Once,
                   help="training output directory or checkpoint file whose vocabularies the shortlist is for")
    p.add_argument("--src", required=True, action=checks.Once, help="source side of a parallel corpus")
    p.add_argument("--tgt", required=True, action=checks.Once, help="target side, line i translating line i")
    p.add_argument("--out", required=True, action=checks.Once, help="the shortlist file to write (JSON)")
    p.add_argument("--iterations", type=int, default=BUILD_ITERATIONS,
                   help=f"EM iterations of IBM Model 1 (default {BUILD_ITERATIONS})")
    p.add_argument("--keep", type=int, default=BUILD_KEEP,
                   help=f"translations kept per source subword, most probable first (default {BUILD_KEEP})")
    p.add_argument("--min-prob", type=float, default=BUILD_MIN_PROB,
                   help=f"drop translations less probable than this (default {BUILD_MIN_PROB})")
    p.add_argument("--threads", type=int, help="CPU threads")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import load
    from rnmt.data.reading import read_parallel
    from rnmt.search.shortlist import build_shortlist
    from rnmt.training.checkpoint import atomic_write_text

    checks.given_once(args)
    checks.at_least(args, 1, "iterations", "keep")
    if not 0.0 <= args.min_prob < 1.0:
        raise UserError(f"--min-prob must be in [0, 1), got {args.min_prob}")
    checks.use_threads(args.threads)
    checks.output_apart("--out", args.out, [("--src", args.src), ("--tgt", args.tgt), ("--model", [args.model])])
    if Path(args.out).is_dir():  # before the estimation, not after it
        raise UserError(f"--out {args.out}: is a directory, not a file to write")
    src_lines, tgt_lines, n_blank = read_parallel(args.src, args.tgt)
    if not src_lines:
        raise UserError(f"{args.src}: no line pair with both sides non-blank to estimate a shortlist from")
    loaded = load(args.model, "cpu").loaded
    src_vocab, tgt_vocab = loaded.src_vocab, loaded.tgt_vocab
    start = time.perf_counter()
    pairs = list(zip(src_vocab.encode_batch(src_lines), tgt_vocab.encode_batch(tgt_lines)))
    built_from = {"built_from": [Path(args.src).name, Path(args.tgt).name]}
    text, best = build_shortlist(pairs, src_vocab, tgt_vocab, built_from, args.iterations, args.keep, args.min_prob,
                                 progress=lambda line: print(line, file=sys.stderr, flush=True))
    atomic_write_text(Path(args.out), text)
    listed = sum(1 for b in best if b)
    blank = f" ({n_blank:,} pairs with a blank side skipped)" if n_blank else ""
    print(f"shortlist: {args.out}: {listed:,} source subwords with translations (mean "
          f"{sum(len(b) for b in best) / max(listed, 1):.1f} each), from {len(pairs):,} sentence "
          f"pair{'' if len(pairs) == 1 else 's'}{blank} "
          f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0
