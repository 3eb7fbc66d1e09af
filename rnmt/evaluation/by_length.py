"""BLEU by source-sentence length.

Two groupings of the test set by source length in whitespace-separated words, both built
from one list of increasing boundaries ``b_0 < b_1 < ... < b_k``:

* ``longer_than`` (DTMT, Fig. 3): bucket ``>b_i`` holds every sentence with more than
  ``b_i`` words. Buckets are cumulative and overlap.
* ``disjoint`` (Cseq2seq, Fig. 2): bucket ``(b_i, b_{i+1}]`` holds sentences with more
  than ``b_i`` and at most ``b_{i+1}`` words, and a last bucket ``>b_k`` holds the rest.
  Each sentence longer than ``b_0`` falls in exactly one bucket.

Sentences with at most ``b_0`` words belong to no bucket. Each bucket is scored as its own
corpus with sacrebleu; an empty bucket has no score (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from rnmt.errors import UserError
from rnmt.evaluation.metrics import References, corpus_bleu

FORMS = ("disjoint", "longer_than")
DEFAULT_BOUNDARIES = (0, 10, 20, 30, 40, 50, 60)


@dataclass(frozen=True)
class Bucket:
    """Source lengths ``low < length <= high`` (``high=None``: no upper bound)."""

    form: str
    low: int
    high: Optional[int]

    @property
    def label(self) -> str:
        """Short label for tables and plots: ``1-10`` or ``>60``."""
        if self.high is None:
            return f">{self.low}"
        return f"{self.low + 1}-{self.high}"

    def contains(self, length: int) -> bool:
        """Whether a source sentence of ``length`` words falls in this bucket."""
        return length > self.low and (self.high is None or length <= self.high)


@dataclass(frozen=True)
class BucketScore:
    """BLEU of every system on the sentences of one bucket."""

    bucket: Bucket
    count: int  # number of sentences in the bucket
    bleu: Dict[str, Optional[float]]  # system name -> BLEU, None when the bucket is empty


def parse_boundaries(spec: str) -> List[int]:
    """Parse ``"0,10,20"`` into strictly increasing non-negative integers."""
    try:
        values = [int(part) for part in spec.split(",") if part.strip() != ""]
    except ValueError:
        raise UserError(f"--buckets: expected comma-separated integers, got {spec!r}") from None
    if not values:
        raise UserError("--buckets: at least one boundary is needed")
    if values[0] < 0 or any(b <= a for a, b in zip(values, values[1:])):
        raise UserError(f"--buckets: boundaries must be non-negative and increasing, got {spec!r}")
    return values


def make_buckets(boundaries: Sequence[int], form: str) -> List[Bucket]:
    """The buckets of one form (`FORMS`) for the given boundaries."""
    if form == "longer_than":
        return [Bucket(form, b, None) for b in boundaries]
    if form == "disjoint":
        closed = [Bucket(form, a, b) for a, b in zip(boundaries, boundaries[1:])]
        return closed + [Bucket(form, boundaries[-1], None)]
    raise ValueError(f"unknown bucket form {form!r}")


def source_lengths(lines: Sequence[str]) -> List[int]:
    """Length of each source line in whitespace-separated words."""
    return [len(line.split()) for line in lines]


def assign(lengths: Sequence[int], buckets: Sequence[Bucket]) -> List[List[int]]:
    """For each bucket, the (0-based) indices of the sentences it contains."""
    return [[i for i, n in enumerate(lengths) if bucket.contains(n)] for bucket in buckets]


def bleu_by_length(lengths: Sequence[int], systems: Mapping[str, Sequence[str]],
                   references: References, boundaries: Sequence[int],
                   tokenize: str = "13a", lowercase: bool = False
                   ) -> Dict[str, List[BucketScore]]:
    """Score every system on every bucket of both forms; keys of the result are `FORMS`."""
    results: Dict[str, List[BucketScore]] = {}
    for form in FORMS:
        buckets = make_buckets(boundaries, form)
        rows = []
        for bucket, indices in zip(buckets, assign(lengths, buckets)):
            refs = [[ref[i] for i in indices] for ref in references]
            scores: Dict[str, Optional[float]] = {}
            for name, hyps in systems.items():
                if indices:
                    subset = [hyps[i] for i in indices]
                    scores[name] = corpus_bleu(subset, refs, tokenize, lowercase).score
                else:
                    scores[name] = None
            rows.append(BucketScore(bucket, len(indices), scores))
        results[form] = rows
    return results


def _fmt(score: Optional[float]) -> str:
    return "-" if score is None else f"{score:.2f}"


def format_tsv(results: Mapping[str, Sequence[BucketScore]], systems: Sequence[str]) -> str:
    """One tab-separated table: form, bucket, sentences, then BLEU per system."""
    lines = ["\t".join(["form", "bucket", "sentences", *systems])]
    for form, rows in results.items():
        for row in rows:
            cells = [form, row.bucket.label, str(row.count)]
            lines.append("\t".join(cells + [_fmt(row.bleu[s]) for s in systems]))
    return "\n".join(lines) + "\n"


def format_markdown(results: Mapping[str, Sequence[BucketScore]], systems: Sequence[str]) -> str:
    """One Markdown table per form, with a heading saying how buckets are formed."""
    headings = {"disjoint": "BLEU by source length (disjoint buckets)",
                "longer_than": "BLEU on sentences longer than N source words"}
    parts = []
    for form, rows in results.items():
        header = ["bucket", "sentences", *systems]
        table = [f"### {headings[form]}", "",
                 "| " + " | ".join(header) + " |",
                 "|" + "|".join(["---"] * 2 + ["---:"] * len(systems)) + "|"]
        for row in rows:
            cells = [row.bucket.label, str(row.count)] + [_fmt(row.bleu[s]) for s in systems]
            table.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(table))
    return "\n\n".join(parts) + "\n"


def write_tables(results: Mapping[str, Sequence[BucketScore]], systems: Sequence[str],
                 out_dir: str | Path) -> List[Path]:
    """Write ``by_length.tsv`` and ``by_length.md`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    tsv, md = out / "by_length.tsv", out / "by_length.md"
    tsv.write_text(format_tsv(results, systems), encoding="utf-8")
    md.write_text(format_markdown(results, systems), encoding="utf-8")
    return [tsv, md]
