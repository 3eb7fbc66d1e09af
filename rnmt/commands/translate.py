"""rnmt translate --model DIR_OR_CHECKPOINT [--model ...] [--input FILE] [--output FILE] [--beam N] ...

Several ``--model`` options decode with the ensemble of those models (the mean of their
log-probabilities at every step); they must share their vocabularies.

Every output has at most ``--max-output-tokens`` subwords (the server's rule and
default, `rnmt.search.limits`); a line longer than ``--max-input-tokens`` subwords is
translated in pieces joined into its one output line, with a warning naming the line.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings

import torch

from rnmt.data import read_lines
from rnmt.errors import LongLineWarning, UserError, write_failure
from rnmt.search.limits import MAX_OUTPUT_TOKENS


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
    p.add_argument("--max-output-tokens", type=int, default=MAX_OUTPUT_TOKENS, metavar="N",
                   help=f"longest output in subwords, whatever the source length (default {MAX_OUTPUT_TOKENS}, "
                        f"as rnmt serve)")
    p.add_argument("--max-input-tokens", type=int, metavar="N",
                   help="translate a line of more subwords in pieces joined into one output line, with a "
                        "warning (default: the longest source whose output --max-output-tokens does not cut)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--int8", action="store_true",
                   help="decode with int8 matrix products (CPU; rnmt/int8.py, docs/performance.md)")
    p.add_argument("--threads", type=int, help="CPU threads")
    p.add_argument("--speed", action="store_true", help="report sentences/s and words/s on stderr")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import load

    # before the model loads, in option terms
    for name, low in (("beam", 1), ("nbest", 1), ("batch_tokens", 1), ("max_output_tokens", 1),
                      ("max_input_tokens", 2)):
        value = getattr(args, name)
        if value is not None and value < low:
            raise UserError(f"--{name.replace('_', '-')} must be at least {low}, got {value}")
    for name in ("alpha", "max_len_ratio"):
        value = getattr(args, name)
        if value is not None and not 0 <= value < float("inf"):  # NaN fails too
            raise UserError(f"--{name.replace('_', '-')} must be a finite number of at least 0, got {value}")
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load(args.model, args.device, int8=args.int8)  # several paths: an ensemble
    lines = read_lines(args.input)
    nbest = args.nbest or 1
    source = args.input if args.input and args.input != "-" else "<stdin>"

    def show(message, *_, **__) -> None:
        if isinstance(message, LongLineWarning):
            print(f"warning: {source} line {message.line}: {message.subwords} subwords, more than "
                  f"--max-input-tokens {message.limit}: translated in {message.pieces} pieces joined into one "
                  f"output line", file=sys.stderr, flush=True)
        else:
            print(f"warning: {message}", file=sys.stderr, flush=True)

    # The output file is opened first: an unwritable one is reported before the translation, not after.
    out = _open_output(args.output) if args.output else sys.stdout
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("always", LongLineWarning)
            warnings.showwarning = show
            results = model.translate(lines, beam=args.beam, nbest=nbest, alpha=args.alpha, greedy=args.greedy,
                                      normalize=args.normalize, max_len_ratio=args.max_len_ratio,
                                      batch_tokens=args.batch_tokens, max_output_tokens=args.max_output_tokens,
                                      max_input_tokens=args.max_input_tokens)
        seconds = time.perf_counter() - start
        for i, result in enumerate(results):
            if nbest > 1:
                for h in result:
                    out.write(f"{i} ||| {h.text} ||| {h.score:.4f}\n")
            else:
                out.write(result + "\n")
        if out is not sys.stdout:
            out.close()
    except OSError as exc:
        if out is sys.stdout or isinstance(exc, BrokenPipeError):
            raise
        what, advice = write_failure(exc)
        raise UserError(f"{args.output}: {what} while writing the translations: {advice}") from None
    finally:
        if out is not sys.stdout:
            with contextlib.suppress(OSError):  # closed above, or already failing: the error is reported
                out.close()
    best = [hyps[0].text for hyps in results] if nbest > 1 else results
    if args.speed:
        words = sum(len(text.split()) for text in best)
        print(f"translated {len(lines)} sentences, {words} words in {seconds:.2f} s: "
              f"{len(lines) / max(seconds, 1e-9):.1f} sentences/s, {words / max(seconds, 1e-9):.1f} words/s",
              file=sys.stderr)
    return 0


def _open_output(path: str):
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        what, advice = write_failure(exc)
        raise UserError(f"{path}: {what}: {advice}") from None
