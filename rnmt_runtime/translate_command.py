"""The translation loop of ``rnmt translate --model EXPORT_DIR``: options checked before the
model loads, input in chunks, each chunk translated and written in input order.

Output, one entry per input line (blank lines give empty entries): ``TEXT``; with
``--nbest N``: N lines ``i ||| TEXT ||| SCORE`` (i counts from 0), as ``rnmt translate``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional

from rnmt_runtime.cli import UNSUPPORTED
from rnmt_runtime.errors import ExportError
from rnmt_runtime.lines import LineSource, OutputFile
from rnmt_runtime.sampling import Sampling
from rnmt_runtime.translator import Options, Translation, Translator, available_cores


def check(args: argparse.Namespace) -> Optional[Sampling]:
    """Every mistake in the options, before anything is loaded; the sampling asked for."""
    for flag, why in UNSUPPORTED.items():
        if getattr(args, "unsupported_" + flag[2:].replace("-", "_")) is not None:
            raise ExportError(f"{flag} is not available with an export directory ({why}): "
                              f"translate with the training run or checkpoint instead")
    if len(args.model) > 1:
        raise ExportError("several --model options (an ensemble) need the PyTorch models: an export directory "
                          "translates on its own")
    if args.device not in ("auto", "cpu"):
        raise ExportError(f"--device {args.device}: the runtime decodes on the CPU (auto | cpu)")
    if args.greedy and args.nbest > 1:
        raise ExportError(f"--nbest {args.nbest} needs beam search: --greedy gives one hypothesis")
    if args.coverage and (args.greedy or args.sample or args.beam == 1):
        raise ExportError("--coverage ranks the finished hypotheses of beam search: not with greedy search or "
                          "--sample")
    if args.shortlist and args.sample:
        raise ExportError("--shortlist restricts a search; --sample draws from the whole vocabulary: use one")
    given = [f"--{n}" for n in ("topk", "topp", "temperature", "epsilon", "seed") if getattr(args, n) is not None]
    if not args.sample:
        if given:
            raise ExportError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only with --sample "
                              f"(beam search does not sample)")
        return None
    if args.beam is not None or args.greedy:
        raise ExportError(f"--sample draws each word at random: it does not combine with "
                          f"--{'beam' if args.beam is not None else 'greedy'}")
    return Sampling(topk=args.topk or 0, topp=1.0 if args.topp is None else args.topp,
                    temperature=1.0 if args.temperature is None else args.temperature,
                    seed=1 if args.seed is None else args.seed, epsilon=args.epsilon or 0.0)


def format_result(i: int, hyps: List[Translation], nbest: int) -> str:
    if nbest == 1:
        return hyps[0].text + "\n"
    return "".join(f"{i} ||| {h.text} ||| {h.score:.4f}\n" for h in hyps)


def run(args: argparse.Namespace) -> int:
    sampling = check(args)
    source = LineSource(args.input)
    prefixes = LineSource(args.prefix) if args.prefix else None
    try:
        # one thread per graph call, the threads spent on batches searched side by side (Translator)
        translator = Translator(args.model[0], threads=1, parallel_batches=args.threads or available_cores())
        if args.int8 and translator.manifest.precision != "int8":
            raise ExportError(f"--int8: {translator.manifest.path} is an fp32 export; write int8 graphs with "
                              f"rnmt export --int8 and translate with that directory")
        if args.shortlist:
            translator.use_shortlist(args.shortlist, *args.shortlist_sizes)
        out = OutputFile(args.output)
        try:
            lines, words, seconds = _loop(translator, args, sampling, source, prefixes, out)
            out.commit()
        except BaseException:
            out.discard()
            raise
    finally:
        source.close()
        if prefixes is not None:
            prefixes.close()
    if args.speed:
        print(f"translated {lines} sentences, {words} words in {seconds:.2f} s: "
              f"{lines / max(seconds, 1e-9):.1f} sentences/s, {words / max(seconds, 1e-9):.1f} words/s",
              file=sys.stderr)
    return 0


def _loop(translator: Translator, args: argparse.Namespace, sampling: Optional[Sampling], source: LineSource,
          prefixes: Optional[LineSource], out: OutputFile):
    lines = words = 0
    seconds = 0.0
    prefix_chunks = prefixes.chunks(args.chunk_lines) if prefixes is not None else None
    pending_prefixes: List[str] = []

    def warn_split(index: int, subwords: int, pieces: int) -> None:
        print(f"warning: {source.name} line {lines + index + 1}: {subwords} subwords, more than --max-input-tokens "
              f"{limit}: translated in {pieces} pieces joined into one output line", file=sys.stderr, flush=True)

    limit = translator.plan(Options(max_output_tokens=args.max_output_tokens, max_len_ratio=args.max_len_ratio,
                                    max_input_tokens=args.max_input_tokens, coverage=args.coverage)).max_input
    for chunk in source.chunks(args.chunk_lines):
        chunk_prefixes = None
        if prefix_chunks is not None:
            while len(pending_prefixes) < len(chunk):
                more = next(prefix_chunks, None)
                if more is None:
                    raise ExportError(f"--prefix {args.prefix} has {prefixes.lines_read} lines but the input has more")
                pending_prefixes.extend(more)
            chunk_prefixes, pending_prefixes = pending_prefixes[:len(chunk)], pending_prefixes[len(chunk):]
        options = Options(beam=args.beam, greedy=args.greedy, alpha=args.alpha, normalize=args.normalize,
                          nbest=args.nbest, max_len_ratio=args.max_len_ratio, batch_tokens=args.batch_tokens,
                          max_output_tokens=args.max_output_tokens, max_input_tokens=args.max_input_tokens,
                          min_output_tokens=args.min_output_tokens, no_repeat_ngram=args.no_repeat_ngram,
                          coverage=args.coverage, sampling=sampling, prefixes=chunk_prefixes,
                          line_offset=lines, on_split=warn_split)
        start = time.perf_counter()
        results = translator.translate(chunk, options)
        seconds += time.perf_counter() - start
        out.write("".join(format_result(lines + k, r, args.nbest) for k, r in enumerate(results)))
        lines += len(chunk)
        words += sum(len(r[0].text.split()) for r in results)
    if prefix_chunks is not None and (pending_prefixes or next(prefix_chunks, None) is not None):
        raise ExportError(f"--prefix {args.prefix} has more lines than the input ({lines})")
    return lines, words, seconds
