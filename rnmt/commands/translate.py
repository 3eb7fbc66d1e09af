"""rnmt translate --model DIR_OR_CHECKPOINT [--model ...] [--input FILE] [--output FILE] [--beam N] ...

Several ``--model`` options decode with the ensemble of those models (the mean of their
log-probabilities at every step); they must share their vocabularies. Input is read and
answered chunk by chunk (`rnmt.commands.translate_stream`, which also defines the output
formats): files in bounded memory, pipes line by line as they are written.

Every output has at most ``--max-output-tokens`` subwords (the server's rule and
default, `rnmt.search.limits`); a line longer than ``--max-input-tokens`` subwords is
translated in pieces joined into its one output line, with a warning naming the line.
"""

from __future__ import annotations

import argparse
import sys

import torch

from rnmt.commands import checks
from rnmt.config import PENALTY
from rnmt.errors import UserError
from rnmt.search.limits import MAX_OUTPUT_TOKENS

DEFAULT_CHUNK_LINES = 5000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action="append",
                   help="training output directory or checkpoint file; repeat it to decode with an ensemble")
    p.add_argument("--input", help="source text, one segment per line (default: stdin)")
    p.add_argument("--output", help="where to write translations (default: stdout)")
    p.add_argument("--beam", type=int, help="beam size (default from the model's config; 1 = greedy)")
    p.add_argument("--greedy", action="store_true", help="greedy search")
    p.add_argument("--alpha", type=float, help="GNMT length penalty exponent")
    p.add_argument("--normalize", choices=["gnmt", "length", "none"], help="length normalisation of scores")
    p.add_argument("--coverage", type=float, metavar="BETA",
                   help="GNMT coverage penalty on beam search's finished hypotheses (default from the model's "
                        "config; 0: off): beta * sum over source words of log(min(their total attention, 1))")
    p.add_argument("--nbest", type=int, help="print the N best translations as 'i ||| text ||| score'")
    p.add_argument("--max-len-ratio", type=float, help="output length limit as a multiple of the input length")
    p.add_argument("--batch-tokens", type=int, help="source tokens per decoding batch")
    p.add_argument("--no-repeat-ngram", type=int, metavar="N",
                   help="no output contains the same N subwords twice (default from the model's config; 0: off)")
    p.add_argument("--min-output-tokens", type=int, metavar="N",
                   help="no output ends before N subwords, so none is empty (default from the model's config; "
                        "0: off)")
    p.add_argument("--max-output-tokens", type=int, default=MAX_OUTPUT_TOKENS, metavar="N",
                   help=f"longest output in subwords, whatever the source length (default {MAX_OUTPUT_TOKENS}, "
                        f"as rnmt serve)")
    p.add_argument("--max-input-tokens", type=int, metavar="N",
                   help="translate a line of more subwords in pieces joined into one output line, with a "
                        "warning (default: the longest source whose output --max-output-tokens does not cut)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--int8", action="store_true",
                   help="decode with int8 matrix products (CPU; rnmt/int8.py, docs/performance.md)")
    p.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="on a GPU, replay each search step from a CUDA graph instead of launching its kernels one "
                        "by one (default on; fp32; rnmt/search/step_graphs.py, docs/performance.md \"On a GPU\")")
    p.add_argument("--threads", type=int, help="CPU threads")
    p.add_argument("--speed", action="store_true", help="report sentences/s and words/s on stderr")
    p.add_argument("--sample", action="store_true",
                   help="draw each word from the model's distribution instead of searching (--nbest N: N samples)")
    p.add_argument("--topk", type=int, help="with --sample: draw among the K most probable words")
    p.add_argument("--topp", type=float, help="with --sample: draw among the most probable words of mass P")
    p.add_argument("--temperature", type=float, help="with --sample: divide log-probabilities by T first")
    p.add_argument("--seed", type=int, help="with --sample: seed of the draws (default 1; same seed, same output)")
    p.add_argument("--prefix", metavar="FILE",
                   help="target prefixes, one per input line (empty: none); each output starts with its prefix")
    p.add_argument("--constraints", metavar="FILE",
                   help="target phrases each output must contain, one line per input line, phrases separated by "
                        "tabs (empty line: none); beam search with dynamic beam allocation (greedy: a beam of one)")
    p.add_argument("--scores", action="store_true",
                   help="add each output subword's log-probability: TEXT<TAB>LOGPROBS<TAB>PIECES")
    p.add_argument("--chunk-lines", type=int, default=DEFAULT_CHUNK_LINES,
                   help=f"lines of a file translated per chunk (bounds memory; default {DEFAULT_CHUNK_LINES})")
    p.add_argument("--set", dest="runtime_settings", action="append", default=[], metavar="runtime.KEY=VALUE",
                   help="override a choice of the run's recorded execution plan, e.g. --set "
                        "runtime.int8_kernels=onednn (repeatable; docs/architecture.md, the execution plan)")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import load
    from rnmt.commands.translate_stream import Inputs, translate_stream
    from rnmt.search import step_graphs
    from rnmt.search.sampling import sampling_options

    # before the model loads, in option terms
    checks.at_least(args, 1, "beam", "nbest", "batch_tokens", "chunk_lines", "max_output_tokens")
    checks.at_least(args, 2, "max_input_tokens")
    checks.at_least(args, 0, "no_repeat_ngram", "min_output_tokens")
    if args.greedy and (args.nbest or 1) > 1:
        raise UserError(f"--nbest {args.nbest} needs beam search: --greedy gives one hypothesis")
    if args.min_output_tokens is not None and args.min_output_tokens >= args.max_output_tokens:
        raise UserError(f"--min-output-tokens ({args.min_output_tokens}) must be below --max-output-tokens "
                        f"({args.max_output_tokens}), which counts the end of sentence")
    if args.coverage and (args.greedy or args.sample or args.beam == 1):
        raise UserError("--coverage ranks the finished hypotheses of beam search: not with greedy search or "
                        "--sample")
    for name in ("alpha", "max_len_ratio", "coverage"):
        value = getattr(args, name)
        if value is not None and not 0 <= value < float("inf"):  # NaN fails too
            raise UserError(f"--{name.replace('_', '-')} must be a finite number of at least 0, got {value}")
        if value is not None and name != "max_len_ratio" and not PENALTY.holds(value):
            raise UserError(f"--{name} must be {PENALTY.describe()}, got {value:g}")
    sampling_options(args.sample, args.topk, args.topp, args.temperature, args.seed, args.beam, args.greedy,
                     dash="--")  # checked here for the option names; the API checks again
    if args.constraints and args.sample:
        raise UserError("--constraints need a search: they do not combine with --sample")
    checks.use_threads(args.threads)
    checks.output_apart("--output", args.output, [("--input", args.input), ("--prefix", args.prefix),
                                                  ("--constraints", args.constraints), ("--model", args.model)])
    inputs = Inputs(args)  # a missing input or a prefix file of another length: before the model loads
    from rnmt.plan.decoding import runtime_settings

    runtime = runtime_settings(args.runtime_settings)
    model = load(args.model, args.device, int8=args.int8, runtime=runtime)  # several paths: an ensemble
    if args.int8:
        from rnmt import int8

        note = int8.cpu_note()
        if note:
            print(note, file=sys.stderr)
    if args.cuda_graphs and torch.device(model.device).type != "cuda":
        print("note: --cuda-graphs applies on a GPU only; decoding on the CPU as usual", file=sys.stderr)
    options = dict(beam=args.beam, nbest=args.nbest or 1, alpha=args.alpha, coverage=args.coverage, greedy=args.greedy,
                   normalize=args.normalize, max_len_ratio=args.max_len_ratio, batch_tokens=args.batch_tokens,
                   max_output_tokens=args.max_output_tokens, max_input_tokens=args.max_input_tokens,
                   sample=args.sample, topk=args.topk, topp=args.topp, temperature=args.temperature,
                   seed=args.seed, token_scores=args.scores, no_repeat_ngram=args.no_repeat_ngram,
                   min_output_tokens=args.min_output_tokens)
    with step_graphs.use(args.cuda_graphs is not False):  # searches on CUDA without autocast only (step_graphs.applies)
        return translate_stream(model, inputs, args, options)
