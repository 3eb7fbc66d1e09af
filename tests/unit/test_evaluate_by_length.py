"""Length buckets: assignment by hand, per-bucket BLEU, bucket boundaries."""

from __future__ import annotations

import pytest

from rnmt.errors import UserError
from rnmt.evaluation.by_length import (
    assign,
    bleu_by_length,
    format_markdown,
    make_buckets,
    parse_boundaries,
    source_lengths,
)
from rnmt.evaluation.metrics import corpus_bleu
from rnmt.evaluation.textfiles import read_lines
from tests.evaluate_support import FIXTURES


def _lengths():
    return source_lengths(read_lines(FIXTURES / "lengths_src.txt"))


def test_fixture_source_lengths_are_counted_in_words():
    # lengths_src.txt holds an empty line, then lines of 3, 10, 11, 20, 25 and 61 words.
    assert _lengths() == [0, 3, 10, 11, 20, 25, 61]


def test_disjoint_buckets_assign_each_sentence_once():
    buckets = make_buckets([0, 10, 20], "disjoint")
    assert [b.label for b in buckets] == ["1-10", "11-20", ">20"]
    # 3 and 10 words -> (0, 10]; 11 and 20 -> (10, 20]; 25 and 61 -> >20.
    # The empty line (0 words) is not longer than the first boundary: no bucket.
    assert assign(_lengths(), buckets) == [[1, 2], [3, 4], [5, 6]]


def test_longer_than_buckets_are_cumulative():
    buckets = make_buckets([0, 10, 20], "longer_than")
    assert [b.label for b in buckets] == [">0", ">10", ">20"]
    # >0: every non-empty line; >10: 11, 20, 25, 61 words; >20: 25 and 61 words.
    assert assign(_lengths(), buckets) == [[1, 2, 3, 4, 5, 6], [3, 4, 5, 6], [5, 6]]


def test_bucket_bleu_is_corpus_bleu_of_its_sentences():
    hyps = ["a b c d e f", "the cat sat on the mat", "x y z w", "one two three four five"]
    refs = [["a b c d e f", "the cat sat on a mat", "x y z q", "one two three four five"]]
    lengths = [2, 5, 12, 30]
    results = bleu_by_length(lengths, {"sys": hyps}, refs, [0, 10])
    disjoint = results["disjoint"]
    assert [r.count for r in disjoint] == [2, 2]
    expected = corpus_bleu(hyps[:2], [refs[0][:2]]).score
    assert disjoint[0].bleu["sys"] == pytest.approx(expected)
    assert results["longer_than"][0].bleu["sys"] == pytest.approx(corpus_bleu(hyps, refs).score)


def test_empty_bucket_has_no_score_and_shows_a_dash():
    results = bleu_by_length([3], {"sys": ["a b c"]}, [["a b c"]], [0, 10, 20])
    empty = results["disjoint"][1]
    assert empty.count == 0 and empty.bleu["sys"] is None
    assert "| 11-20 | 0 | - |" in format_markdown(results, ["sys"])


@pytest.mark.parametrize("spec", ["", "10,5", "0,0", "-1,5", "a,b"])
def test_bad_bucket_boundaries_are_user_errors(spec):
    with pytest.raises(UserError, match="--buckets"):
        parse_boundaries(spec)


def test_boundaries_parse_in_order():
    assert parse_boundaries("0,10,20,30") == [0, 10, 20, 30]
