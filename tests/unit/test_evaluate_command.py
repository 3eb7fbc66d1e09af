"""``rnmt evaluate``: registration, one-line user errors, JSON reports, option checks."""

from __future__ import annotations

import json

import pytest

from rnmt import cli
from rnmt.commands import evaluate
from rnmt.errors import UserError
from rnmt.evaluation.metrics import corpus_bleu, read_systems_and_references
from tests.evaluate_support import FIXTURES, run_command

BASE = str(FIXTURES / "hyp_base.txt")
BETTER = str(FIXTURES / "hyp_better.txt")
REF = str(FIXTURES / "ref.txt")
REF2 = str(FIXTURES / "ref2.txt")
SRC = str(FIXTURES / "src.txt")


def _json(capsys, *argv):
    assert run_command(evaluate, argv) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluate_is_registered_in_the_cli():
    assert cli.COMMANDS["evaluate"][0] == "evaluate"
    assert cli.COMMANDS["evaluate-alignment"][0] == "evaluate_alignment"


def test_user_errors_reach_the_cli_as_one_line_and_exit_code_2(capsys, monkeypatch):
    # Only the evaluation commands, so the test does not depend on the other commands.
    monkeypatch.setattr(cli, "COMMANDS", {k: cli.COMMANDS[k]
                                          for k in ("evaluate", "evaluate-alignment")})
    code = cli.main(["evaluate", "--hyp", "missing.txt", "--ref", REF])
    err = capsys.readouterr().err
    assert code == 2 and err == "error: missing.txt: no such file\n"
    assert cli.main(["evaluate", "--hyp", BASE, "--ref", REF, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["systems"][0]["name"] == BASE


def test_json_has_first_system_scores_on_top_and_every_system_listed(capsys):
    report = _json(capsys, "--hyp", BASE, "--hyp", BETTER, "--ref", REF, "--ref", REF2,
                   "--json", "--ter")
    systems, refs = read_systems_and_references([BASE, BETTER], [REF, REF2])
    assert report["bleu"] == corpus_bleu(systems[BASE], refs).score
    assert isinstance(report["chrf"], float) and isinstance(report["ter"], float)
    assert [s["name"] for s in report["systems"]] == [BASE, BETTER]
    assert report["systems"][1]["bleu"] == corpus_bleu(systems[BETTER], refs).score
    assert report["signatures"]["bleu"].startswith("nrefs:2|")
    assert "bootstrap" not in report["systems"][0]


@pytest.mark.parametrize("argv, message", [
    (["--bootstrap", "5", "--seed", "0"], "--seed must be a positive"),
    (["--bootstrap", "-3"], "--bootstrap must be a number of samples from 1 to 100,000, got -3"),
    (["--bootstrap", "1000000000000"], "--bootstrap must be a number of samples from 1 to 100,000"),
    (["--by-length", SRC], "needs --out"),
    (["--buckets", "0,20,10", "--by-length", SRC, "--out", "x"], "increasing"),
    (["--seed", "7"], "--seed is the bootstrap's: it needs --bootstrap N"),  # was ignored without a word
    (["--buckets", "0,10"], "--buckets are --by-length's boundaries"),  # likewise, not even parsed
    (["--width", "-1"], "--width must be from 0 to 17, got -1"),
    (["--width", "1000000000"], "--width must be from 0 to 17, got 1000000000"),  # printed 4 GB of zeros
])
def test_bad_options_are_user_errors(argv, message):
    with pytest.raises(UserError, match=message):
        run_command(evaluate, ["--hyp", BASE, "--ref", REF, *argv])
