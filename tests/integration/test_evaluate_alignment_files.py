"""Alignment files: a perfect alignment, malformed links, unequal and missing files."""

from __future__ import annotations

import pytest

from rnmt.errors import UserError
from rnmt.evaluation.alignment import evaluate_alignment_files
from tests.evaluate_support import FIXTURES

HYP = FIXTURES / "align_hyp.txt"
GOLD = FIXTURES / "align_gold.txt"


def test_perfect_alignment_has_zero_aer(tmp_path):
    gold = tmp_path / "gold.txt"
    gold.write_text("0-0 1-1 2?2\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("1-1 0-0\n", encoding="utf-8")  # possible link 2?2 may be left out
    s = evaluate_alignment_files(hyp, gold)
    assert (s.precision, s.recall, s.aer) == (1.0, 1.0, 0.0)


@pytest.mark.parametrize("line", ["0-0 1:1", "0-0 a-b", "0-0 1-1-X", "0--1"])
def test_malformed_link_names_file_and_line(tmp_path, line):
    bad = tmp_path / "bad.txt"
    bad.write_text(f"0-0\n{line}\n0-0\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"bad.txt:2: malformed alignment link"):
        evaluate_alignment_files(bad, GOLD)


def test_unequal_line_counts_name_both_files(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("0-0\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"short.txt has 1 lines but .*align_gold.txt has 3"):
        evaluate_alignment_files(short, GOLD)


def test_missing_gold_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="missing.txt: no such file"):
        evaluate_alignment_files(HYP, tmp_path / "missing.txt")
