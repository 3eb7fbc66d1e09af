"""Sampling on a tiny trained run: reproducible per line whatever the batching, n-best samples
scored like beam hypotheses."""

from __future__ import annotations

import pytest

import rnmt

LINES = ["Y dijo Dios: Sea la luz.", "", "Y vio Dios que la luz era buena.", "Y llamó Dios á la luz Día"]


def test_same_seed_same_samples_whatever_the_batching(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    first = model.translate(LINES, sample=True, seed=5)
    assert model.translate(LINES, sample=True, seed=5) == first
    assert model.translate(LINES, sample=True, seed=5, batch_tokens=8) == first  # one sentence per batch
    assert model.translate(LINES[2:], sample=True, seed=5, line_offset=2) == first[2:]  # a later chunk
    assert model.translate(LINES, sample=True, seed=6) != first
    assert first[1] == ""  # a blank line stays blank


def test_nbest_samples_are_scored_like_beam_hypotheses(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    samples = model.translate(LINES, sample=True, nbest=3, topp=0.9, normalize="none", token_scores=True)
    for line, hyps in zip(LINES, samples):
        assert len(hyps) == (3 if line else 1)
        assert all(a.score >= b.score for a, b in zip(hyps, hyps[1:]))
        for h in hyps if line else []:  # with normalize none a score is the log-probability
            assert sum(h.token_log_probs) == pytest.approx(h.score, abs=1e-3)
