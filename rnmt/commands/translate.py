"""rnmt translate --model DIR_OR_CHECKPOINT [--model ...] [--input FILE] [--output FILE] [--beam N] ...

Several ``--model`` options decode with the ensemble of those models (the mean of their
log-probabilities at every step); they must share their vocabularies. Input is read and
answered chunk by chunk (`rnmt.commands.translate_stream`, which also defines the output
formats): files in bounded memory, pipes line by line as they are written.

Every output has at most ``--max-output-tokens`` subwords (the server's rule and
default, `rnmt.search.limits`); a line longer than ``--max-input-tokens`` subwords is
translated in pieces joined into its one output line, with a warning naming the line.
The search options' flags come from their one definition (`rnmt.search.options`). A file
named by ``--output`` is replaced only once every line is written, so an interrupted run
leaves it as it was (`rnmt.commands.translate_stream.OutputFile`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from typing import Any, Iterator

import torch

from rnmt.commands import checks, shortlist
from rnmt.errors import UserError
from rnmt.search import options as search_options

DEFAULT_CHUNK_LINES = 5000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action="append",
                   help="training output directory or checkpoint file; repeat it to decode with an ensemble; an export "
                        "directory (rnmt export) is translated by the runtime without torch (docs/deploy.md)")
    p.add_argument("--input", help="source text, one segment per line (default: stdin)")
    p.add_argument("--output", help="where to write translations (default: stdout)")
    search_options.add_arguments(p)  # every search option's flag, from rnmt.search.options
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--int8", action="store_true",
                   help="decode with int8 matrix products (CPU; rnmt/int8.py, docs/performance.md)")
    p.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="on a GPU, replay each search step from a CUDA graph instead of launching its kernels one "
                        "by one (default on; fp32; rnmt/search/step_graphs.py, docs/performance.md \"On a GPU\")")
    shortlist.add_use_arguments(p, "not for --sample")
    p.add_argument("--threads", type=int, help="CPU threads")
    p.add_argument("--speed", action="store_true", help="report sentences/s and words/s on stderr")
    p.add_argument("--chunk-lines", type=int, default=DEFAULT_CHUNK_LINES,
                   help=f"lines of a file translated per chunk (bounds memory; default {DEFAULT_CHUNK_LINES})")
    p.add_argument("--set", dest="runtime_settings", action="append", default=[], metavar="runtime.KEY=VALUE",
                   help="override a choice of the run's recorded execution plan, e.g. --set "
                        "runtime.int8_kernels=onednn (repeatable; docs/architecture.md, the execution plan)")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, as Ctrl-C raises KeyboardInterrupt."""


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises `Terminated` for the duration (main thread only: elsewhere it cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace) -> int:
    """Translate; an interruption (Ctrl-C, SIGTERM) is one line naming what became of
    ``--output`` (left as it was: `rnmt.commands.translate_stream.OutputFile`), exit code
    130 or 143 (128 + the signal's number), as a shell reports a process the signal ended."""
    try:
        with _terminate_as_interrupt():
            return _run(args)
    except KeyboardInterrupt as exc:
        name, code = ("SIGTERM", 128 + signal.SIGTERM) if isinstance(exc, Terminated) else ("SIGINT", 130)
        output = args.output if args.output and args.output != "-" else None
        kept = ""
        if output is not None and (not os.path.exists(output) or os.path.isfile(output)):
            kept = (f"; {output} keeps its previous content" if os.path.exists(output)
                    else f"; {output} was not written")
        print(f"error: interrupted by {name}{kept}", file=sys.stderr, flush=True)
        return code


def _run(args: argparse.Namespace) -> int:
    from rnmt.api import load
    from rnmt.commands.translate_stream import Inputs, translate_stream
    from rnmt.search import step_graphs
    from rnmt.search.sampling import sampling_options

    # before the model loads, in option terms: each value against its bound, then the combinations
    opts = search_options.from_arguments(args)
    checks.at_least(args, 1, "chunk_lines")
    if args.greedy and opts.nbest > 1:
        raise UserError(f"--nbest {args.nbest} needs beam search: --greedy gives one hypothesis")
    if args.min_output_tokens is not None and args.min_output_tokens >= args.max_output_tokens:
        raise UserError(f"--min-output-tokens ({args.min_output_tokens}) must be below --max-output-tokens "
                        f"({args.max_output_tokens}), which counts the end of sentence")
    if args.coverage and (args.greedy or args.sample or args.beam == 1):
        raise UserError("--coverage ranks the finished hypotheses of beam search: not with greedy search or "
                        "--sample")
    if args.mbr and opts.nbest < 2:
        raise UserError(f"--mbr {args.mbr} chooses among each line's --nbest N candidates: give --nbest 2 or more")
    sampling_options(args.sample, args.topk, args.topp, args.temperature, args.seed, args.beam, args.greedy,
                     dash="--", epsilon=args.epsilon)  # checked here for the option names; the API checks again
    if args.constraints and args.sample:
        raise UserError("--constraints need a search: they do not combine with --sample")
    if args.shortlist and args.sample:
        raise UserError("--shortlist restricts a search; --sample draws from the whole vocabulary: use one")
    shortlist.check_use_arguments(args)
    checks.use_threads(args.threads)
    checks.output_apart("--output", args.output, [("--input", args.input), ("--prefix", args.prefix),
                                                  ("--constraints", args.constraints), ("--model", args.model)])
    inputs = Inputs(args)  # a missing input or a prefix file of another length: before the model loads
    from rnmt.plan.decoding import runtime_settings

    runtime = runtime_settings(args.runtime_settings)
    model = load(args.model, args.device, int8=args.int8, runtime=runtime)  # several paths: an ensemble
    if args.shortlist:
        model.use_shortlist(args.shortlist, *args.shortlist_sizes)
    if args.int8:
        from rnmt import int8

        note = int8.cpu_note()
        if note:
            print(note, file=sys.stderr)
    if args.cuda_graphs and torch.device(model.device).type != "cuda":
        print("note: --cuda-graphs applies on a GPU only; decoding on the CPU as usual", file=sys.stderr)
    with step_graphs.use(args.cuda_graphs is not False):  # searches on CUDA without autocast only (step_graphs.applies)
        return translate_stream(model, inputs, args, opts)
