"""Corpus BLEU, chrF and TER, computed by sacrebleu.

rnmt never re-implements a metric: each function here builds the sacrebleu metric object,
scores the corpus and returns the score together with sacrebleu's signature string, which
records every option needed to reproduce the number.

Text may be detokenised (the default ``13a`` tokeniser, as in WMT) or already tokenised
(``tokenize="none"`` scores the given whitespace tokens as they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric

from rnmt.errors import UserError
from rnmt.evaluation.textfiles import check_same_length, read_lines

# The sacrebleu tokenisers that need no extra packages (ja-mecab, ko-mecab and the
# sentencepiece-based ones pull in optional dependencies).
TOKENIZERS: Tuple[str, ...] = ("13a", "none", "intl", "zh", "char")

# Metric keys accepted by `make_metric`, in display order.
METRICS: Tuple[str, ...] = ("bleu", "chrf", "ter")

# A corpus of references: references[k][i] is the k-th reference of sentence i.
References = Sequence[Sequence[str]]


@dataclass(frozen=True)
class CorpusScore:
    """One corpus-level score with the sacrebleu signature that reproduces it."""

    metric: str  # sacrebleu's name for the metric: "BLEU", "chrF2", "TER"
    score: float
    signature: str
    detail: str  # sacrebleu's own one-line rendering, e.g. "BLEU = 25.3 58.1/31.0/... "


def make_metric(name: str, tokenize: str = "13a", lowercase: bool = False,
                references: References | None = None, effective_order: bool = False) -> Metric:
    """Build the sacrebleu metric object for ``name`` in `METRICS`.

    ``tokenize`` only applies to BLEU: chrF works on characters and TER has its own
    fixed normalisation. Passing ``references`` lets sacrebleu cache their statistics,
    which matters when the same references score many systems or bootstrap samples.
    ``effective_order`` (BLEU only) is for scoring single sentences.
    """
    if tokenize not in TOKENIZERS:
        raise UserError(f"unknown tokenizer {tokenize!r}; choose one of {', '.join(TOKENIZERS)}")
    if name == "bleu":
        return BLEU(tokenize=tokenize, lowercase=lowercase, references=references, effective_order=effective_order)
    if name == "chrf":
        return CHRF(lowercase=lowercase, references=references)
    if name == "ter":
        return TER(case_sensitive=not lowercase, references=references)
    raise UserError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")


def corpus_score(name: str, hypotheses: Sequence[str], references: References,
                 tokenize: str = "13a", lowercase: bool = False) -> CorpusScore:
    """Score ``hypotheses`` against one or more reference streams with metric ``name``."""
    metric = make_metric(name, tokenize=tokenize, lowercase=lowercase)
    result = metric.corpus_score(list(hypotheses), [list(r) for r in references])
    return CorpusScore(metric=result.name, score=float(result.score),
                       signature=str(metric.get_signature()), detail=str(result))


def sentence_scores(name: str, hypotheses: Sequence[str], references: References,
                    tokenize: str = "13a", lowercase: bool = False) -> List[float]:
    """Metric ``name`` of every sentence on its own (sacrebleu's ``sentence_score``; BLEU with
    ``effective_order``, as sacrebleu's ``sentence_bleu``, so a short line is not zero for
    lacking 4-grams). For finding the lines where systems differ, not for ranking systems:
    sentence BLEU is noisy and its mean is not corpus BLEU."""
    metric = make_metric(name, tokenize=tokenize, lowercase=lowercase, effective_order=True)
    return [float(metric.sentence_score(hyp, [r[i] for r in references]).score)
            for i, hyp in enumerate(hypotheses)]


def corpus_bleu(hypotheses: Sequence[str], references: References,
                tokenize: str = "13a", lowercase: bool = False) -> CorpusScore:
    """Corpus BLEU (sacrebleu defaults: exponential smoothing, 4-grams)."""
    return corpus_score("bleu", hypotheses, references, tokenize, lowercase)


def corpus_chrf(hypotheses: Sequence[str], references: References,
                lowercase: bool = False) -> CorpusScore:
    """Corpus chrF2 (character 6-grams, beta 2)."""
    return corpus_score("chrf", hypotheses, references, lowercase=lowercase)


def corpus_ter(hypotheses: Sequence[str], references: References,
               lowercase: bool = False) -> CorpusScore:
    """Corpus TER (lower is better)."""
    return corpus_score("ter", hypotheses, references, lowercase=lowercase)


def read_systems_and_references(hyp_paths: Sequence[str | Path], ref_paths: Sequence[str | Path]
                                ) -> Tuple[Dict[str, List[str]], List[List[str]]]:
    """Read hypothesis files (one per system) and reference files (one per reference).

    Returns ``({hyp path: lines}, [reference lines, ...])``. Every file must exist, be
    UTF-8 and have as many lines as the first reference; a mismatch raises `UserError`
    naming both files and their line counts.
    """
    if not hyp_paths:
        raise UserError("no hypothesis file given (--hyp)")
    if not ref_paths:
        raise UserError("no reference file given (--ref)")
    references = [read_lines(p) for p in ref_paths]
    first_ref = ref_paths[0]
    if not references[0]:
        raise UserError(f"{first_ref}: empty reference file")
    for path, lines in zip(ref_paths[1:], references[1:]):
        check_same_length(first_ref, references[0], path, lines)
    systems: Dict[str, List[str]] = {}
    for path in hyp_paths:
        name = str(path)
        if name in systems:
            raise UserError(f"{name}: hypothesis file given twice")
        lines = read_lines(path)
        check_same_length(path, lines, first_ref, references[0])
        systems[name] = lines
    return systems, references
