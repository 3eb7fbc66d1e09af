"""Alignment precision, recall and AER (Och & Ney, 2000) on a hand-checked fixture."""

from __future__ import annotations

import json

import pytest

from rnmt.commands import evaluate_alignment
from rnmt.errors import UserError
from rnmt.evaluation.alignment import evaluate_alignment_files, parse_links
from tests.evaluate_support import FIXTURES, run_command

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


@pytest.mark.parametrize("token", ["9" * 5000 + "-0", "\u0661-\u0662", "0?" + "9" * 20])
def test_a_link_index_python_cannot_read_or_in_another_script_is_malformed(token):
    with pytest.raises(UserError, match="malformed alignment link"):
        parse_links("0-0 " + token, "gold.txt:3")
