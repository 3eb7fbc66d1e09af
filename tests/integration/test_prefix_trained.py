"""Target prefixes on a tiny trained run: outputs start with them, scores cover the whole
output."""

from __future__ import annotations

import pytest

import rnmt

LINES = ["Y dijo Dios: Sea la luz.", "Y vio Dios que la luz era buena.", "", "Y llamó Dios á la luz Día"]
PREFIXES = ["And God said", "", "Then", "It   was"]


@pytest.mark.parametrize("options", [{}, {"beam": 3, "nbest": 2}, {"greedy": True},
                                     {"sample": True, "nbest": 2, "seed": 4}])
def test_outputs_start_with_their_prefix(tiny_run, options):
    model = rnmt.load(tiny_run, device="cpu")
    results = model.translate(LINES, prefix=PREFIXES, **options)
    for line, prefix, result in zip(LINES, PREFIXES, results):
        texts = [h.text for h in result] if isinstance(result, list) else [result]
        for text in texts:
            if not line:
                assert text == ""  # a blank source line stays blank
            else:
                assert text.startswith(" ".join(prefix.split()))


def test_empty_prefixes_change_nothing(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    assert model.translate(LINES, prefix=[""] * len(LINES), beam=3) == model.translate(LINES, beam=3)


def test_prefix_scores_are_those_of_the_whole_output(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    [hyp] = model.translate(LINES[:1], prefix=PREFIXES[:1], beam=3, normalize="none", token_scores=True)
    assert hyp.text.startswith("And God said") and hyp.pieces[-1] == "</s>"
    assert len(hyp.pieces) == len(hyp.token_log_probs)
    assert sum(hyp.token_log_probs) == pytest.approx(hyp.score, abs=1e-3)


def test_prefix_count_must_match_lines(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(rnmt.UserError, match="3 prefixes for 4 lines"):
        model.translate(LINES, prefix=PREFIXES[:3])
