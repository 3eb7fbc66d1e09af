"""Minimum Bayes risk decoding on a tiny trained run: the API's and the command's choice is
the candidate a direct computation over the same candidates picks."""

from __future__ import annotations

import numpy as np
import pytest
from sacrebleu.metrics import CHRF

import rnmt
from rnmt.errors import UserError
from tests.support import run_rnmt

LINES = ["Y dijo Dios: Sea la luz.", "", "Y vio Dios que la luz era buena.", "Y llamó Dios á la luz Día"]


def _direct_choice(texts, weights):
    metric = CHRF()
    expected = [sum(w * metric.sentence_score(h, [r]).score for w, r in zip(weights, texts)) for h in texts]
    return texts[int(np.argmax(expected))]


def test_mbr_over_samples_chooses_the_sample_of_highest_expected_chrf(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    samples = model.translate(LINES, sample=True, nbest=6, seed=3, epsilon=0.02)
    chosen = model.translate(LINES, sample=True, nbest=6, seed=3, epsilon=0.02, mbr="chrf")
    assert len(chosen) == len(LINES) and chosen[1] == ""
    for line, hyps, best in zip(LINES, samples, chosen):
        if line:
            texts = [h.text for h in hyps]
            assert best == _direct_choice(texts, [1 / len(texts)] * len(texts))


def test_mbr_over_a_beams_nbest_weighs_each_by_its_probability(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    # normalize none: a hypothesis's score is its log-probability, the evidence weight's source
    nbest = model.translate(LINES, beam=5, nbest=5, normalize="none")
    chosen = model.translate(LINES, beam=5, nbest=5, normalize="none", mbr="chrf")
    for line, hyps, best in zip(LINES, nbest, chosen):
        if line:
            p = np.exp(np.array([h.score for h in hyps]) - max(h.score for h in hyps))
            assert best == _direct_choice([h.text for h in hyps], p / p.sum())
    with_scores = model.translate(LINES[0], beam=5, nbest=5, mbr="bleu", token_scores=True)
    assert isinstance(with_scores, rnmt.Hypothesis) and with_scores.pieces[-1] == "</s>"


def test_mbr_needs_candidates(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(UserError, match="nbest must be at least 2"):
        model.translate(LINES, mbr="chrf")
    with pytest.raises(UserError, match="option 'mbr' must be one of chrf, bleu"):
        model.translate(LINES, nbest=3, mbr="comet")


def test_translate_command_writes_one_mbr_choice_per_line(tiny_run, tmp_path):
    src = tmp_path / "in.es"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "out.en"
    done = run_rnmt("translate", "--model", tiny_run, "--input", src, "--output", out, "--nbest", "4", "--sample",
                    "--epsilon", "0.02", "--seed", "3", "--mbr", "chrf")
    assert done.returncode == 0, done.stderr
    model = rnmt.load(tiny_run, device="cpu")
    assert out.read_text(encoding="utf-8").splitlines() == model.translate(LINES, sample=True, nbest=4, seed=3,
                                                                           epsilon=0.02, mbr="chrf")
    for flags, message in [(["--mbr", "chrf"], "--mbr chrf chooses among each line's --nbest N candidates"),
                           (["--epsilon", "0.1"], "--epsilon applies only with --sample"),
                           (["--mbr", "ter", "--nbest", "3"], "invalid choice: 'ter'")]:
        failed = run_rnmt("translate", "--model", tiny_run, "--input", src, *flags)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr


def test_mbr_chooses_among_what_prefixes_and_constraints_allow(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    prefixes = ["And God", "", "And", ""]
    chosen = model.translate(LINES, beam=4, nbest=4, mbr="chrf", prefix=prefixes, no_repeat_ngram=3)
    assert all(out.startswith(p) for out, p in zip(chosen, prefixes))
    constrained = model.translate(LINES, beam=4, nbest=4, mbr="bleu", constraints=[["light"], [], [], ["day"]])
    assert "light" in constrained[0] and "day" in constrained[3]
