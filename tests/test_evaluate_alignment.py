"""Alignment precision, recall and AER (Och & Ney, 2000) on a hand-checked fixture."""

from __future__ import annotations

import json

import pytest

from rnmt.commands import evaluate_alignment
from rnmt.errors import UserError
from rnmt.evaluation.alignment import evaluate_alignment_files, parse_links
from tests.test_evaluate_support import FIXTURES, run_command

HYP = FIXTURES / "align_hyp.txt"
GOLD = FIXTURES / "align_gold.txt"


def test_gold_marks_sure_and_possible_links():
    links = parse_links("0-0 1-1-S 2?2 2-3-P")
    assert links.sure == {(0, 0), (1, 1)}
    # Sure links are possible links too (S ⊆ P).
    assert links.possible == {(0, 0), (1, 1), (2, 2), (2, 3)}


def test_fixture_scores_match_hand_computation():
    # gold line 1: "0-0 1-1 2?2 2-3-P"  S = {00, 11}        P = S + {22, 23}
    # gold line 2: "0-1-S 1-0 1?1"      S = {01, 10}        P = S + {11}
    # gold line 3: ""                   S = P = {}
    # hyp  line 1: "0-0 1-2 2-2"        A∩S = {00}          A∩P = {00, 22}
    # hyp  line 2: "0-1 1-0 1-1 0-0"    A∩S = {01, 10}      A∩P = {01, 10, 11}
    # hyp  line 3: "0-0"                A∩S = {}            A∩P = {}
    # |A| = 3 + 4 + 1 = 8, |S| = 2 + 2 = 4, |A∩S| = 1 + 2 = 3, |A∩P| = 2 + 3 = 5
    s = evaluate_alignment_files(HYP, GOLD)
    assert (s.hyp_links, s.sure_links, s.hyp_and_sure, s.hyp_and_possible) == (8, 4, 3, 5)
    assert s.precision == pytest.approx(5 / 8)  # |A∩P| / |A|
    assert s.recall == pytest.approx(3 / 4)  # |A∩S| / |S|
    assert s.aer == pytest.approx(1 - (3 + 5) / (8 + 4))  # = 1/3


def test_perfect_alignment_has_zero_aer(tmp_path):
    gold = tmp_path / "gold.txt"
    gold.write_text("0-0 1-1 2?2\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("1-1 0-0\n", encoding="utf-8")  # possible link 2?2 may be left out
    s = evaluate_alignment_files(hyp, gold)
    assert (s.precision, s.recall, s.aer) == (1.0, 1.0, 0.0)


def test_command_prints_precision_recall_aer(capsys):
    assert run_command(evaluate_alignment, ["--hyp", str(HYP), "--gold", str(GOLD)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["precision 0.6250", "recall    0.7500", "AER       0.3333"]


def test_command_json_output(capsys):
    assert run_command(evaluate_alignment, ["--hyp", str(HYP), "--gold", str(GOLD),
                                            "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["precision"] == 0.625 and report["recall"] == 0.75
    assert report["aer"] == pytest.approx(1 / 3)
    assert report["sentences"] == 3


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
