"""``rnmt evaluate-alignment``: precision, recall and AER of word alignments."""

from __future__ import annotations

import argparse
import json
from typing import Optional

from rnmt.evaluation.alignment import evaluate_alignment_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the options of ``rnmt evaluate-alignment``."""
    parser.add_argument("--hyp", required=True, metavar="FILE",
                        help="hypothesis alignments, Pharaoh format (i-j, 0-based source-target)")
    parser.add_argument("--gold", required=True, metavar="FILE",
                        help="gold alignments: i-j or i-j-S sure, i?j or i-j-P possible")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def run(args: argparse.Namespace) -> int:
    """Score the alignments and print the report; returns the exit code."""
    s = evaluate_alignment_files(args.hyp, args.gold)
    if args.json:
        print(json.dumps({
            "precision": s.precision, "recall": s.recall, "aer": s.aer,
            "sentences": s.sentences, "hyp_links": s.hyp_links, "sure_links": s.sure_links,
            "possible_links": s.possible_links, "hyp_and_sure": s.hyp_and_sure,
            "hyp_and_possible": s.hyp_and_possible}, indent=2))
        return 0
    print(f"precision {_fmt(s.precision)}")
    print(f"recall    {_fmt(s.recall)}")
    print(f"AER       {_fmt(s.aer)}")
    print(f"links: {s.sentences} sentences, hypothesis {s.hyp_links}, sure {s.sure_links}, "
          f"possible {s.possible_links} (sure included), hyp&sure {s.hyp_and_sure}, "
          f"hyp&possible {s.hyp_and_possible}")
    return 0
