"""rnmt analyze --model M --src S [--tgt T] --out DIR [--max-sentences N]

Heatmaps of attention (and of per-source gates where a model reports them), ATR gate
statistics with Pearson's r, and ATR dependency weights; an index.html shows them all.
"""

from __future__ import annotations

import argparse

from rnmt.analysis.report import MAX_PICTURE_TOKENS, PICTURE_TOKENS_LIMIT
from rnmt.commands import checks
from rnmt.errors import UserError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action=checks.Once, help="training output directory or checkpoint file")
    p.add_argument("--src", required=True, metavar="FILE", help="source sentences, one per line")
    p.add_argument("--tgt", metavar="FILE",
                   help="target sentences to force-decode (default: the model's own translations)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the PNGs, summary.json, index.html")
    p.add_argument("--max-sentences", type=int, default=5, metavar="N",
                   help="draw pictures for the first N sentences (gate statistics use all; default 5)")
    p.add_argument("--max-picture-tokens", type=int, default=MAX_PICTURE_TOKENS, metavar="N",
                   help=f"picture only sentences of at most N subwords a side, passing over longer ones by name "
                        f"(a picture's pixels grow with the square of N; default {MAX_PICTURE_TOKENS}, "
                        f"at most {PICTURE_TOKENS_LIMIT})")
    p.add_argument("--beam", type=int, help="beam size when translating (default from the model's config)")
    p.add_argument("--greedy", action="store_true", help="translate with greedy search")
    p.add_argument("--batch-tokens", type=int, default=2000, help="source tokens per batch")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--threads", type=int, help="CPU threads")


def run(args: argparse.Namespace) -> int:
    from rnmt.analysis.report import analyze
    from rnmt.data import read_lines
    from rnmt.device import pick_device
    from rnmt.evaluation.textfiles import check_same_length
    from rnmt.models import load_model

    checks.given_once(args)
    checks.at_least(args, 0, "max_sentences")
    checks.at_least(args, 1, "max_picture_tokens")
    if args.max_picture_tokens > PICTURE_TOKENS_LIMIT:
        raise UserError(f"--max-picture-tokens must be at most {PICTURE_TOKENS_LIMIT}, got {args.max_picture_tokens}")
    checks.at_least(args, 1, "beam", "batch_tokens")
    checks.use_threads(args.threads)
    if args.tgt and (args.beam is not None or args.greedy):  # they would be ignored without a word
        raise UserError("--beam and --greedy choose how to translate; with --tgt the given targets are "
                        "force-decoded instead")
    src_lines = read_lines(args.src)
    tgt_lines = None
    if args.tgt:
        tgt_lines = read_lines(args.tgt)
        check_same_length(args.src, src_lines, args.tgt, tgt_lines)
    device = pick_device(args.device)
    loaded = load_model(args.model, device)
    search = {"greedy": args.greedy}
    if args.beam is not None:
        search["beam"] = args.beam
    try:
        analyze(loaded, src_lines, args.out, tgt_lines, args.max_sentences, device, args.batch_tokens, search,
                max_picture_tokens=args.max_picture_tokens)
    except OSError as exc:
        raise UserError(f"{args.out}: cannot write the report ({exc.strerror or exc})") from None
    return 0
