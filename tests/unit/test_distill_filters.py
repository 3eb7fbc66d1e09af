"""The distillation filters (rnmt.distill.filters): each test, its order, its counts."""

from __future__ import annotations

import pytest

from rnmt.distill.filters import filter_pairs, is_looping, length_ratio, percentile
from rnmt.evaluation.repetition import repetition


def test_looping_is_the_repetition_check_of_evaluate():
    lines = ["and he said and he said and he said and he said", "the the the the the the",
             "In the beginning God created the heavens", "a b c d a b c d", ""]
    assert [is_looping(line) for line in lines] == [True, True, False, False, False]
    # the same lines as `rnmt evaluate --repetition` counts them
    assert sum(map(is_looping, lines)) == repetition(lines).looping_lines


def test_length_ratio_counts_whitespace_words():
    assert length_ratio("uno dos", "one two three four") == 2.0
    assert length_ratio("", "one") == 1.0  # an empty source counts as one word, never a division by zero


def test_percentile_matches_linear_interpolation():
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 4.0
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 90) == pytest.approx(3.7)


def test_each_pair_counts_under_the_first_test_it_fails():
    sources = ["uno dos tres", "", "uno dos tres", "uno dos tres", "uno", "uno dos tres"]
    decoded = [("one two three", 1.0),        # kept
               ("", None),                    # empty source
               ("", 0.5),                     # empty output
               ("x y z w x y z w x y z w", 0.1),  # looping (and off in length: counted once, as looping)
               ("one two three four five", 0.2),  # ratio 5 > 3
               ("one two three", 9.0)]        # the worst teacher score
    result = filter_pairs(sources, decoded, min_ratio=0.5, max_ratio=3.0, drop_worst=40.0)
    assert result.dropped == {"empty": 2, "looping": 1, "length_ratio": 1, "teacher_score": 1}
    assert result.kept == [0]
    assert sum(result.dropped.values()) + len(result.kept) == len(sources)
    counts = result.counts(len(sources))
    assert counts["pairs"] == 6 and counts["kept"] == 1 and counts["teacher_score_threshold"] is not None


def test_no_score_filter_keeps_every_clean_pair_in_order():
    sources = ["a b", "c d", "e f"]
    decoded = [("x y", 3.0), ("z w", 1.0), ("v u", 2.0)]
    result = filter_pairs(sources, decoded, 0.5, 2.0, drop_worst=0)
    assert result.kept == [0, 1, 2] and result.score_threshold is None
    assert result.dropped["teacher_score"] == 0


def test_score_filter_drops_the_highest_cross_entropy():
    sources = [f"w{i} v{i}" for i in range(10)]
    decoded = [(f"x{i} y{i}", float(i)) for i in range(10)]
    result = filter_pairs(sources, decoded, 0.5, 2.0, drop_worst=20)
    assert result.kept == list(range(8))  # 9 and 8 lie above the 80th percentile (7.2)
    assert result.dropped["teacher_score"] == 2
