"""rnmt score --model M --src S --tgt T [--normalize none|length] [--tokens] [--output F]

Forced decoding of given pairs: one score per line, log p(target | source) in natural-log
units, ``</s>`` included (``--normalize length``: per token). Both files are read in chunks
of lines, so memory stays bounded. For n-best rescoring, write each hypothesis on its own
line of ``--tgt`` with its source repeated on the same line of ``--src``
(docs/translation.md, "N-best rescoring").
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from rnmt.commands import checks


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action="append",
                   help="training output directory or checkpoint file; repeat it to score with an ensemble")
    p.add_argument("--src", required=True, help="source sentences, one per line")
    p.add_argument("--tgt", required=True, help="target sentences, line i translating line i of --src")
    p.add_argument("--output", help="where to write the scores (default: stdout)")
    p.add_argument("--normalize", choices=["none", "length"], default="none",
                   help="none: the sentence's log-probability; length: divided by its tokens (</s> included)")
    p.add_argument("--tokens", action="store_true",
                   help="add each subword's log-probability: SCORE<TAB>LOGPROBS<TAB>PIECES")
    p.add_argument("--batch-tokens", type=int, default=4000, help="source tokens per batch")
    p.add_argument("--chunk-lines", type=int, default=5000, help="lines read per chunk (bounds memory)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--threads", type=int, help="CPU threads")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import load
    from rnmt.commands.translate_stream import AlignedLines, open_output, write_chunk
    from rnmt.data.streaming import LineSource

    checks.at_least(args, 1, "batch_tokens", "chunk_lines")
    checks.use_threads(args.threads)
    checks.output_apart("--output", args.output, [("--src", args.src), ("--tgt", args.tgt), ("--model", args.model)])
    source = LineSource(args.src)
    try:
        targets = AlignedLines(args.tgt, "--tgt", source.name, source.remaining_lines())
        model = load(args.model, args.device)
        out = open_output(args.output)
        try:
            done = 0
            for chunk in source.chunks(args.chunk_lines):
                scores = model.score(chunk, targets.take(len(chunk)), batch_tokens=args.batch_tokens, first_line=done)
                done += len(chunk)
                write_chunk(out, "".join(_line(s, args.normalize, args.tokens) for s in scores), args.output, "scores")
            targets.finish()
        finally:
            if out is not sys.stdout:
                with contextlib.suppress(OSError):  # a failing write is reported above
                    out.close()
    finally:
        source.close()
    return 0


def _line(score, normalize: str, tokens: bool) -> str:
    value = score.log_prob / len(score.token_log_probs) if normalize == "length" else score.log_prob
    if not tokens:
        return f"{value:.4f}\n"
    return (f"{value:.4f}\t{' '.join(f'{x:.4f}' for x in score.token_log_probs)}\t"
            f"{' '.join(score.tokens)}\n")
