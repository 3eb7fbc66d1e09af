"""``rnmt evaluate``: score system outputs against references with sacrebleu.

Prints one line per system (BLEU, chrF and their sacrebleu signatures), or one JSON
object with ``--json``. Optional extras: a paired bootstrap test of every system against
the first (``--bootstrap N``), BLEU by source length with tables and plots
(``--by-length SRC --out DIR``), and degenerate output (``--repetition``: looping lines and
the repeated word 4-gram rate of every system and of the first reference,
`rnmt.evaluation.repetition`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from rnmt.commands import checks
from rnmt.errors import UserError
from rnmt.evaluation import by_length
from rnmt.evaluation.metrics import TOKENIZERS, CorpusScore, corpus_score, read_systems_and_references, sentence_scores
from rnmt.evaluation.repetition import Repetition, repetition
from rnmt.evaluation.significance import DEFAULT_SEED, BootstrapResult, paired_bootstrap
from rnmt.evaluation.textfiles import check_same_length, read_lines

MAX_WIDTH = 17  # a double has no more significant digits; 10^9 printed 4 GB of zeros

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the options of ``rnmt evaluate``."""
    parser.add_argument("--hyp", action="append", required=True, metavar="FILE",
                        help="system output, one sentence per line; repeat for several "
                             "systems (the first is the baseline for --bootstrap)")
    parser.add_argument("--ref", action="append", required=True, metavar="FILE",
                        help="reference translation; repeat for multiple references")
    parser.add_argument("--tokenize", choices=TOKENIZERS, default="13a",
                        help="BLEU tokeniser: 13a for detokenised text (default), none for "
                             "text that is already tokenised, intl, zh or char")
    parser.add_argument("--lowercase", action="store_true", help="case-insensitive scores")
    parser.add_argument("--ter", action="store_true", help="also report TER")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--width", type=int, default=2, metavar="DIGITS",
                        help=f"decimal digits in the plain output (default 2, at most {MAX_WIDTH})")
    parser.add_argument("--bootstrap", type=int, default=0, metavar="N",
                        help="paired bootstrap with N samples: 95%% confidence intervals and "
                             "p-values against the first system (0, the default: none)")
    parser.add_argument("--seed", type=int,
                        help=f"bootstrap random seed, a positive integer (default {DEFAULT_SEED})")
    parser.add_argument("--by-length", metavar="SRC_FILE", dest="by_length",
                        help="source file: also report BLEU by source length in words")
    parser.add_argument("--buckets",
                        help="length boundaries for --by-length (default "
                             f"{','.join(map(str, by_length.DEFAULT_BOUNDARIES))})")
    parser.add_argument("--out", metavar="DIR",
                        help="directory for the --by-length tables and plots")
    parser.add_argument("--sentences", metavar="FILE",
                        help="also write every line's sentence BLEU and chrF per system to FILE (tab-separated), "
                             "to find the lines where systems differ")
    parser.add_argument("--repetition", action="store_true",
                        help="also report looping lines (a word 4-gram three times in a line) and the share of "
                             "repeated word 4-grams, of every system and of the reference")


def run(args: argparse.Namespace) -> int:
    """Score the systems and print the report; returns the exit code."""
    boundaries = _check_arguments(args)
    systems, references = read_systems_and_references(args.hyp, args.ref)
    names = list(systems)
    metric_keys = ["bleu", "chrf"] + (["ter"] if args.ter else [])
    scores = {name: {key: corpus_score(key, hyps, references, args.tokenize, args.lowercase)
                     for key in metric_keys}
              for name, hyps in systems.items()}
    found = _Results(names, metric_keys, scores, {key: scores[names[0]][key].signature for key in metric_keys})
    if args.bootstrap:
        found.signatures, found.boot = paired_bootstrap(
            list(systems.items()), references, metric_keys, n_samples=args.bootstrap,
            seed=args.seed, tokenize=args.tokenize, lowercase=args.lowercase)
    if args.repetition:  # the first reference stands for what natural text repeats
        found.repeats = {name: repetition(hyps) for name, hyps in systems.items()}
        found.ref_repeats = repetition(references[0])
    if args.sentences:
        found.written.append(_write_sentence_scores(Path(args.sentences), systems, references, metric_keys, args))
    if args.by_length:
        src = read_lines(args.by_length)
        check_same_length(args.by_length, src, args.ref[0], references[0])
        found.length_results = by_length.bleu_by_length(
            by_length.source_lengths(src), systems, references, boundaries,
            args.tokenize, args.lowercase)
        found.written += _write_length_report(found.length_results, names, Path(args.out))
    if args.json:
        print(json.dumps(_full_json_report(found, args), indent=2, ensure_ascii=False))
    else:
        _print_plain_report(found, args)
    return 0


def _check_arguments(args: argparse.Namespace) -> List[int]:
    """Refuse option combinations that would do nothing or overwrite an input; set the
    bootstrap's default seed; returns the --by-length boundaries (none without it)."""
    if args.by_length and not args.out:
        raise UserError("--by-length needs --out DIR for its tables and plots")
    if args.out and not args.by_length:
        raise UserError("--out is only used with --by-length SRC_FILE")
    if not 0 <= args.width <= MAX_WIDTH:
        raise UserError(f"--width must be from 0 to {MAX_WIDTH}, got {args.width}")
    # options of an extra that was not asked for would be ignored without a word
    if args.seed is not None and not args.bootstrap:
        raise UserError("--seed is the bootstrap's: it needs --bootstrap N")
    if args.buckets is not None and not args.by_length:
        raise UserError("--buckets are --by-length's boundaries: they need --by-length SRC_FILE")
    read = [("--hyp", args.hyp), ("--ref", args.ref), ("--by-length", args.by_length)]
    checks.output_apart("--sentences", args.sentences, read)
    for name in ("by_length.tsv", "by_length.md", *(f"by_length_{form}.png" for form in by_length.FORMS)):
        if args.out:
            checks.output_apart("--out", Path(args.out) / name, read)
    args.seed = DEFAULT_SEED if args.seed is None else args.seed
    buckets = args.buckets or ",".join(map(str, by_length.DEFAULT_BOUNDARIES))
    return by_length.parse_boundaries(buckets) if args.by_length else []


@dataclass
class _Results:
    """What `run` found, for the report."""

    names: List[str]
    metric_keys: List[str]
    scores: Dict[str, Dict[str, CorpusScore]]
    signatures: Dict[str, str]
    boot: Optional[Dict[str, Dict[str, BootstrapResult]]] = None
    repeats: Optional[Dict[str, Repetition]] = None
    ref_repeats: Optional[Repetition] = None
    length_results: Any = None
    written: List[Path] = field(default_factory=list)


def _full_json_report(found: _Results, args: argparse.Namespace) -> Dict[str, Any]:
    """The ``--json`` object: `_json_report` with the extras that were asked for."""
    report = _json_report(found.names, found.metric_keys, found.scores, found.signatures, found.boot, args)
    if found.repeats is not None and found.ref_repeats is not None:
        for entry in report["systems"]:
            entry["repetition"] = found.repeats[entry["name"]].to_dict()
        report["reference_repetition"] = found.ref_repeats.to_dict()
    if found.length_results is not None:
        report["by_length"] = _json_by_length(found.length_results)
    if found.written:
        report["files"] = [str(p) for p in found.written]
    return report


def _print_plain_report(found: _Results, args: argparse.Namespace) -> None:
    """The plain report: a line per system, the signatures, then the extras asked for."""
    names, scores = found.names, found.scores
    pad = max(len(name) for name in names)  # line the score columns up
    for name in names:
        print(_plain_line(name.ljust(pad), name, found.metric_keys, scores[name], found.boot, args.width))
    for key in found.metric_keys:
        print(f"signature {scores[names[0]][key].metric}: {found.signatures[key]}")
    if found.repeats is not None and found.ref_repeats is not None:
        for label, rep in [*found.repeats.items(), (f"reference {args.ref[0]}", found.ref_repeats)]:
            print(f"repetition {label}: looping lines {rep.looping_lines} of {rep.lines}, "
                  f"repeated 4-grams {rep.repeated_ngram_rate:.{args.width}f}%")
    if found.length_results is not None:
        print()
        print(by_length.format_markdown(found.length_results, names), end="")
        print()
    if found.written:
        print("wrote " + ", ".join(str(p) for p in found.written))


def _write_sentence_scores(path: Path, systems: Dict[str, List[str]], references: List[List[str]],
                           keys: List[str], args: argparse.Namespace) -> Path:
    """One row per line: its number (from 1), then each system's score per metric."""
    columns = [sentence_scores(key, hyps, references, args.tokenize, args.lowercase)
               for hyps in systems.values() for key in keys]
    header = "line\t" + "\t".join(f"{name} {key}" for name in systems for key in keys)
    rows = ["\t".join([str(i + 1), *(f"{col[i]:.4f}" for col in columns)]) for i in range(len(references[0]))]
    from rnmt.training.checkpoint import atomic_write_text

    atomic_write_text(path, "\n".join([header, *rows]) + "\n")
    return path


def _write_length_report(results: Dict[str, List[by_length.BucketScore]], names: List[str],
                         out: Path) -> List[Path]:
    """Write the by-length tables and plots into ``out`` (created if needed)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory (--out)")
    out.mkdir(parents=True, exist_ok=True)
    from rnmt.evaluation.plots import plot_all  # matplotlib only when plots are asked for

    return by_length.write_tables(results, names, out) + plot_all(results, names, out)


def _plain_line(label: str, name: str, keys: List[str], scores: Dict[str, CorpusScore],
                boot: Optional[Dict[str, Dict[str, BootstrapResult]]], width: int) -> str:
    """``LABEL  BLEU 25.31  chrF2 51.77`` with bootstrap details when present."""
    parts = [label]
    for key in keys:
        s = scores[key]
        text = f"{s.metric} {s.score:.{width}f}"
        if boot is not None:
            b = boot[name][key]
            text += f" (mean {b.mean:.{width}f} +/- {b.ci:.{width}f}"
            text += ")" if b.p_value is None else f", p = {b.p_value:.4f})"
        parts.append(text)
    return "  ".join(parts)


def _json_report(names: List[str], keys: List[str], scores: Dict[str, Dict[str, CorpusScore]],
                 signatures: Dict[str, str],
                 boot: Optional[Dict[str, Dict[str, BootstrapResult]]],
                 args: argparse.Namespace) -> Dict[str, Any]:
    """The JSON report: the first system's scores at top level, every system in a list."""
    report: Dict[str, Any] = {key: scores[names[0]][key].score for key in keys}
    report["signatures"] = signatures
    report["options"] = {"tokenize": args.tokenize, "lowercase": args.lowercase,
                         "references": list(args.ref)}
    if boot is not None:
        report["bootstrap"] = {"samples": args.bootstrap, "seed": args.seed,
                               "baseline": names[0]}
    entries = []
    for name in names:
        entry: Dict[str, Any] = {"name": name}
        entry.update({key: scores[name][key].score for key in keys})
        if boot is not None:
            entry["bootstrap"] = {
                key: {"mean": b.mean, "ci": b.ci, "low": b.low, "high": b.high,
                      "p_value": b.p_value}
                for key, b in boot[name].items()}
        entries.append(entry)
    report["systems"] = entries
    return report


def _json_by_length(results: Dict[str, List[by_length.BucketScore]]) -> Dict[str, Any]:
    """Both bucket forms as lists of ``{bucket, low, high, sentences, bleu}``."""
    return {form: [{"bucket": r.bucket.label, "low": r.bucket.low, "high": r.bucket.high,
                    "sentences": r.count, "bleu": r.bleu} for r in rows]
            for form, rows in results.items()}
