"""Looping output (rnmt.evaluation.repetition) and the bootstrap interval of a difference."""

from __future__ import annotations

import pytest

from rnmt.evaluation.repetition import repetition
from rnmt.evaluation.significance import difference_interval


def test_natural_lines_have_no_loops_and_a_loop_is_counted_once():
    clean = repetition(["and god said let there be light", "and there was light"])
    assert clean.looping_lines == 0 and clean.repeated_ngram_rate == 0.0
    loop = repetition(["his own own own own own", "and there was light"])
    # "his own own own own own": 3 four-grams, "own own own own" twice -> one repeat of 3
    assert loop.looping_lines == 0 and loop.repeated_ngram_rate == pytest.approx(100 * 1 / 4)
    long_loop = repetition(["to the house of the lord , to the house of the lord , to the house of the lord"])
    assert long_loop.looping_lines == 1 and long_loop.looping_share == 100.0
    assert long_loop.to_dict()["looping_lines"] == 1


def test_short_and_empty_lines_have_no_four_grams():
    r = repetition(["", "a b c"])
    assert r.lines == 2 and r.looping_lines == 0 and r.repeated_ngram_rate == 0.0


REFS = [f"line {i} says something about the weather today" for i in range(60)]


def test_identical_systems_differ_by_exactly_zero():
    d = difference_interval(REFS, REFS, REFS, n_samples=100)
    assert (d.observed, d.low, d.high) == (0.0, 0.0, 0.0)


def test_the_interval_brackets_the_observed_difference_and_has_its_sign():
    worse = [" ".join(r.split()[:4]) for r in REFS]
    d = difference_interval(REFS, worse, REFS, n_samples=200)
    assert d.low <= d.observed <= d.high and d.low > 0
    flipped = difference_interval(worse, REFS, REFS, n_samples=200)
    assert flipped.observed == pytest.approx(-d.observed) and flipped.high < 0
    assert difference_interval(REFS, worse, REFS, n_samples=200).as_list() == d.as_list()  # seeded
