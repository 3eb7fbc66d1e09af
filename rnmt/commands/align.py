"""rnmt align --model M --src S --tgt T [--from attention|update-gate] [--output F]

Forced-decodes every sentence pair and writes one line of Pharaoh links ``i-j`` (0-based
source word i, target word j, whitespace words) per pair; blank pairs give blank lines.
"""

from __future__ import annotations

import argparse
import sys

from rnmt.commands import checks
from rnmt.errors import UserError, write_failure


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action=checks.Once, help="training output directory or checkpoint file")
    p.add_argument("--src", required=True, metavar="FILE", help="source sentences, one per line")
    p.add_argument("--tgt", required=True, metavar="FILE", help="target sentences, line-aligned with --src")
    p.add_argument("--from", dest="source", choices=["attention", "update-gate"], default="attention",
                   help="attention weights (default) or the per-source update gates z~ of a cyclic model")
    p.add_argument("--threshold", type=float, metavar="X",
                   help="link every source word scoring >= X instead of only the argmax word")
    p.add_argument("--output", metavar="FILE", help="where to write the alignments (default: stdout)")
    p.add_argument("--batch-tokens", type=int, default=4000, help="source tokens per batch")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--threads", type=int, help="CPU threads")


def run(args: argparse.Namespace) -> int:
    from rnmt.analysis.align import check_threshold
    from rnmt.analysis.words import format_pharaoh, word_index_of_pieces
    from rnmt.api import load
    from rnmt.data import read_lines
    from rnmt.evaluation.textfiles import check_same_length

    checks.given_once(args)
    checks.at_least(args, 1, "batch_tokens")
    check_threshold(args.threshold, "--threshold")
    checks.use_threads(args.threads)
    checks.output_apart("--output", args.output, [("--src", args.src), ("--tgt", args.tgt), ("--model", args.model)])
    src_lines, tgt_lines = read_lines(args.src), read_lines(args.tgt)
    check_same_length(args.src, src_lines, args.tgt, tgt_lines)
    model = load(args.model, args.device)
    links = model.align(src_lines, tgt_lines, source=args.source, threshold=args.threshold,
                        batch_tokens=args.batch_tokens)
    vocabs = {"--src": model.loaded.src_vocab, "--tgt": model.loaded.tgt_vocab}
    for k, (s, t) in enumerate(zip(src_lines, tgt_lines)):
        if not (s.strip() and t.strip()):
            continue
        for name, text in (("--src", s), ("--tgt", t)):
            vocab = vocabs[name]
            pieces = [vocab.id_to_piece(i) for i in vocab.encode(text)]
            n = max(word_index_of_pieces(pieces), default=-1) + 1
            if n != len(text.split()):
                print(f"warning: {name} line {k + 1}: the subword pieces give {n} words but the line "
                      f"has {len(text.split())} whitespace words; positions may be shifted", file=sys.stderr)
    text = "".join(format_pharaoh(line) + "\n" for line in links)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:  # a full disk, a file size limit: one line naming the file
            what, advice = write_failure(exc)
            raise UserError(f"{args.output}: {what} while writing the alignments: {advice}") from None
    else:
        sys.stdout.write(text)
    return 0
