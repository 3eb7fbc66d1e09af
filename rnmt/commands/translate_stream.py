"""The loop behind ``rnmt translate``: input in chunks, each translated, written and flushed.

Each chunk (up to ``--chunk-lines`` lines of a file, or the lines waiting in a pipe) is
translated in one call, which sorts its lines by length into token batches, and written
in input order before the next chunk is read: memory is bounded by the chunk, and a line
written into an open pipe is answered at once (`rnmt.data.streaming`).

Output formats, one entry per input line (blank lines give empty entries):

* ``TEXT``; with ``--nbest N``: N lines ``i ||| TEXT ||| SCORE`` (i counts from 0), unless
  ``--mbr`` chooses one of the N (then ``TEXT``);
* with ``--scores``: ``TEXT<TAB>LOGPROBS<TAB>PIECES``, or ``i ||| TEXT ||| SCORE ||| LOGPROBS
  ||| PIECES``: the target subwords (``</s>`` last, space-separated; a subword never holds a
  space) and the natural-log probability of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
import time
import warnings
from typing import Any, Dict, Iterator, List, Optional, TextIO, Tuple

from rnmt.data import count_lines, iter_lines
from rnmt.data.streaming import LineSource
from rnmt.errors import LongLineWarning, UserError, write_failure
from rnmt.search.options import SearchOptions
from rnmt_runtime.lines import OutputFile as RuntimeOutputFile


def open_output(path: Optional[str]) -> TextIO:
    """The output file, or standard output for none or ``-`` (as ``--input -`` is standard input)."""
    if not path or path == "-":
        return sys.stdout
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        what, advice = write_failure(exc)
        raise UserError(f"{path}: {what}: {advice}") from None


class OutputFile(RuntimeOutputFile):
    """``--output FILE`` written whole or not at all (`rnmt_runtime.lines.OutputFile`, the
    torch-free runtime's, which this one shares), its errors phrased with rnmt's advice for
    a refused write (`write_failure`)."""

    def _error(self, exc: OSError, writing: bool) -> Exception:
        what, advice = write_failure(exc)
        return UserError(f"{self.path}: {what}{' while writing the translations' if writing else ''}: {advice}")


def write_chunk(out: TextIO, text: str, path: Optional[str], what: str) -> None:
    """Write and flush one chunk of output; a write the system refuses (a full disk, a file
    size limit) is a one-line `UserError` naming ``path``. Standard output's failures, and a
    closed pipe, go up as they are."""
    try:
        out.write(text)
        out.flush()
    except OSError as exc:
        if out is sys.stdout or isinstance(exc, BrokenPipeError):
            raise
        failure, advice = write_failure(exc)
        raise UserError(f"{path}: {failure} while writing the {what}: {advice}") from None


class AlignedLines:
    """A file read alongside the input, one line per input line (``--prefix``, ``--constraints``, ``--tgt``)."""

    def __init__(self, path: str, option: str, source_name: str, expected: Optional[int]) -> None:
        self.path, self.option = path, option
        # Both regular files: compare before anything is done. A pipe (`--tgt <(sed ...)`) is
        # read once, so it is compared as it is read (counting it first consumed it all).
        if expected is not None and os.path.isfile(path):
            n = count_lines(path)
            if n != expected:
                raise UserError(f"{option} {path} has {n} lines but the input {source_name} has {expected}")
        self._lines: Iterator[str] = iter_lines(path)
        self._used = 0

    def take(self, n: int) -> List[str]:
        chunk = list(itertools.islice(self._lines, n))
        self._used += len(chunk)
        if len(chunk) < n:
            raise UserError(f"{self.option} {self.path} has {self._used} lines but the input has more")
        return chunk

    def finish(self) -> None:
        if next(self._lines, None) is not None:
            raise UserError(f"{self.option} {self.path} has more lines than the input ({self._used})")


def format_result(i: int, hyps: Any, nbest: int, scores: bool) -> str:
    """The output lines of input line ``i`` (see the module docstring)."""
    if nbest == 1 and not scores:
        return hyps + "\n"
    hyps = hyps if isinstance(hyps, list) else [hyps]
    out = []
    for h in hyps:
        columns = [h.text]
        if nbest > 1:
            columns = [str(i), h.text, f"{h.score:.4f}"]
        if scores:
            columns += [" ".join(f"{x:.4f}" for x in h.token_log_probs), " ".join(h.pieces)]
        out.append((" ||| " if nbest > 1 else "\t").join(columns) + "\n")
    return "".join(out)


def progress_bar(source: LineSource, total: Optional[int]):
    """A lines/s bar on a terminal's stderr, unless the input is typed on a terminal."""
    if not sys.stderr.isatty() or source.is_terminal:
        return None
    from tqdm import tqdm

    # Always lines/s (tqdm turns a rate below one into s/line by default).
    rate = "{elapsed}, {rate_noinv_fmt}"
    bar_format = ("{l_bar}{bar}| {n_fmt}/{total_fmt} [" + rate + "]" if total is not None
                  else "{n_fmt} lines [" + rate + "]")
    # One update per chunk: draw each one (tqdm's default skips updates within 0.1 s of the
    # last, so a fast file could end without its final count ever shown).
    return tqdm(total=total, unit=" lines", file=sys.stderr, dynamic_ncols=True, leave=False, bar_format=bar_format,
                mininterval=0, miniters=1)


def parse_constraints(line: str) -> List[str]:
    """The phrases of one ``--constraints`` line: tab-separated; an empty line has none."""
    return line.split("\t") if line else []


class Inputs:
    """The source lines, their prefixes and constraints, opened and checked before a model is loaded."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.source = LineSource(args.input)
        self.total = self.source.remaining_lines()  # None for a pipe or a terminal
        try:
            self.prefixes = (AlignedLines(args.prefix, "--prefix", self.source.name, self.total)
                             if args.prefix else None)
            self.constraints = (AlignedLines(args.constraints, "--constraints", self.source.name, self.total)
                                if getattr(args, "constraints", None) else None)
        except BaseException:
            self.source.close()
            raise


def translate_stream(model: Any, inputs: Inputs, args: argparse.Namespace, options: SearchOptions) -> int:
    """Translate ``inputs`` into ``args.output`` (or stdout) chunk by chunk; a file named by
    ``--output`` is replaced only when every line is written (`OutputFile`)."""
    source = inputs.source
    bar = progress_bar(source, inputs.total)
    try:
        out = OutputFile(args.output)
    except UserError:
        source.close()
        raise
    done = False
    try:
        lines, words, seconds = _translate_chunks(model, inputs, args, options, out, bar)
        out.commit()
        done = True
    finally:
        source.close()
        if bar is not None:
            bar.close()
        if not done:
            out.discard()
    if args.speed:
        print(f"translated {lines} sentences, {words} words in {seconds:.2f} s: "
              f"{lines / max(seconds, 1e-9):.1f} sentences/s, {words / max(seconds, 1e-9):.1f} words/s",
              file=sys.stderr)
    return 0


def _translate_chunks(model: Any, inputs: Inputs, args: argparse.Namespace, options: SearchOptions,
                      out: OutputFile, bar: Any) -> Tuple[int, int, float]:
    """The loop: each chunk translated and written; (lines, words of the best outputs, seconds)."""
    source, prefixes = inputs.source, inputs.prefixes
    lines = words = 0
    seconds = 0.0

    def show(message, *_, **__) -> None:
        # a split line, named by its line number in the whole input (the chunk's lines + its own)
        if isinstance(message, LongLineWarning):
            print(f"warning: {source.name} line {lines + message.line}: {message.subwords} subwords, more than "
                  f"--max-input-tokens {message.limit}: translated in {message.pieces} pieces joined into one "
                  f"output line", file=sys.stderr, flush=True)
        else:
            print(f"warning: {message}", file=sys.stderr, flush=True)

    for chunk in source.chunks(args.chunk_lines):
        per_line: Dict[str, Any] = {"line_offset": lines}
        if prefixes is not None:
            per_line["prefix"] = prefixes.take(len(chunk))
        if inputs.constraints is not None:
            per_line["constraints"] = [parse_constraints(c) for c in inputs.constraints.take(len(chunk))]
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("always", LongLineWarning)
            warnings.showwarning = show
            results = model.translate(chunk, dataclasses.replace(options, **per_line))
        seconds += time.perf_counter() - start
        shown = 1 if options.mbr else options.nbest  # minimum Bayes risk keeps one of the nbest candidates
        write_chunk(out.stream, "".join(format_result(lines + k, r, shown, options.token_scores)
                                        for k, r in enumerate(results)), args.output, "translations")
        lines += len(chunk)
        words += sum(len(_best_text(r).split()) for r in results)
        if bar is not None:
            bar.update(len(chunk))
    if prefixes is not None:
        prefixes.finish()
    if inputs.constraints is not None:
        inputs.constraints.finish()
    return lines, words, seconds


def _best_text(result: Any) -> str:
    first = result[0] if isinstance(result, list) else result
    return first if isinstance(first, str) else first.text
