"""Checkpoints written by earlier versions still load and translate exactly as they did.

tests/data/compat/ holds one tiny trained model per architecture, written by
scripts/make_compat_checkpoints.py, with the n-best translations and reference
log-probabilities it gave when written (expected.json). A change to the model code, the
checkpoint format or the search must keep these: a model a user trained must not change its
output when rnmt is upgraded. A deliberate format change adds a migration and keeps the old
files.
"""

from __future__ import annotations

import json

import pytest

from tests.support import COMPAT

EXPECTED = json.loads((COMPAT / "expected.json").read_text(encoding="utf-8")) if (COMPAT / "expected.json").is_file() \
    else {}
# Scores are sums of float32 log-probabilities; different CPUs' vector units may round the
# last bits differently, nothing more.
TOLERANCE = 2e-3
# Two candidates this close are tied: which of them the search keeps is decided by that
# rounding (the tiny models loop, and "e e e" and "ee e" can score the same to 1e-5).
TIE = 1e-4


def test_every_architecture_has_a_stored_checkpoint():
    from rnmt.models import registry

    registry.architecture("rnnsearch")  # loads every built-in architecture
    stored = {e["config"] for e in EXPECTED.values()}
    assert len(stored) == len(EXPECTED) >= 12
    # rnmt's own architectures (a test may register an example of its own in-process)
    builtin = {name for name in registry.architectures()
               if registry.architecture(name).builder.__module__.startswith("rnmt.")}
    missing = builtin - set(EXPECTED)
    assert not missing, f"no stored checkpoint for {sorted(missing)}: run scripts/make_compat_checkpoints.py --only ..."


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_stored_checkpoint_translates_and_scores_as_when_written(name):
    import rnmt

    case = EXPECTED[name]
    model = rnmt.load(COMPAT / f"{name}.safetensors", device="cpu")
    nbest = model.translate(case["sources"], **case["search"])
    for line, (got, want) in enumerate(zip(nbest, case["nbest"])):
        assert [h.score for h in got] == pytest.approx([h["score"] for h in want], abs=TOLERANCE)
        for rank, (g, w) in enumerate(zip(got, want)):
            # another text only in place of a tied candidate: the same score to TIE
            assert g.text == w["text"] or abs(g.score - w["score"]) <= TIE, \
                f"{name}: hypothesis {rank} of line {line} changed"
    forced = model.score(case["sources"], case["references"])
    for got, want in zip(forced, case["reference_log_probs"]):
        assert got.token_log_probs == pytest.approx(want, abs=TOLERANCE)
