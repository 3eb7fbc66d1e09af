"""Corpus metrics on the fixture: tokenisation, case, a second reference, bad options."""

from __future__ import annotations

import pytest

from rnmt.errors import UserError
from rnmt.evaluation.metrics import corpus_bleu, corpus_chrf, corpus_ter, make_metric, read_systems_and_references
from tests.evaluate_support import FIXTURES

BASE = FIXTURES / "hyp_base.txt"
REF = FIXTURES / "ref.txt"
REF2 = FIXTURES / "ref2.txt"


def _systems(hyp=BASE, refs=(REF,)):
    systems, references = read_systems_and_references([hyp], list(refs))
    return systems[str(hyp)], references


def test_tokenize_none_scores_given_tokens_only():
    # 13a splits "mat." into "mat ." and so matches the reference; "none" keeps "mat.".
    refs = [["the cat sat on the mat ."]]
    hyps = ["the cat sat on the mat."]
    assert corpus_bleu(hyps, refs, tokenize="13a").score == pytest.approx(100.0)
    assert corpus_bleu(hyps, refs, tokenize="none").score < 100.0


def test_lowercase_makes_scores_case_insensitive():
    refs = [["The Cat Sat On The Mat"]]
    hyps = ["the cat sat on the mat"]
    assert corpus_bleu(hyps, refs).score < 100.0
    assert corpus_bleu(hyps, refs, lowercase=True).score == pytest.approx(100.0)
    assert corpus_chrf(hyps, refs, lowercase=True).score == pytest.approx(100.0)
    assert corpus_ter(hyps, refs, lowercase=True).score == pytest.approx(0.0)
    assert "case:lc" in corpus_bleu(hyps, refs, lowercase=True).signature


def test_second_reference_can_only_raise_bleu():
    hyps, one = _systems()
    _, two = _systems(refs=(REF, REF2))
    assert corpus_bleu(hyps, two).score >= corpus_bleu(hyps, one).score


def test_unknown_tokenizer_is_a_user_error():
    with pytest.raises(UserError, match="ja-mecab"):
        make_metric("bleu", tokenize="ja-mecab")
