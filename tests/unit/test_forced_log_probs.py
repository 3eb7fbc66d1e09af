"""`forced_log_probs` (one teacher-forced pass) against `forced_decode` (step by step): the
scores of `rnmt score` and `rnmt translate --scores` for every paper config, an ensemble and
an int8 model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rnmt import int8
from rnmt.search.ensemble import Ensemble
from rnmt.search.forced import forced_decode, forced_log_probs
from tests.unit.test_models_zoo import PAPER_CONFIGS, SRC_V, TGT_V, _name, tiny_model


def pairs(seed: int = 3, n: int = 5):
    """Sentence pairs of uneven lengths (the batches pad them), one with an empty target."""
    g = torch.Generator().manual_seed(seed)
    src = [torch.randint(4, SRC_V, (int(k),), generator=g).tolist() for k in (7, 2, 5, 9, 4)[:n]]
    tgt = [torch.randint(4, TGT_V, (int(k),), generator=g).tolist() for k in (6, 3, 0, 8, 5)[:n]]
    return src, tgt


def stepwise(model, src, tgt, batch_tokens=12):
    return [fd.token_log_probs for fd in forced_decode(model, src, tgt, batch_tokens)]


@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_one_pass_gives_the_steps_log_probabilities(path):
    model = tiny_model(path)
    src, tgt = pairs()
    got = forced_log_probs(model, src, tgt, batch_tokens=12)  # several batches, sorted by length
    want = stepwise(model, src, tgt)
    assert [len(g) for g in got] == [len(t) + 1 for t in tgt]  # one per target piece and </s>
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    assert not model.training


def test_an_ensemble_scores_its_mean_as_its_step_does():
    members = [tiny_model(PAPER_CONFIGS[0]) for _ in range(2)]
    torch.manual_seed(5)
    for p in members[1].parameters():
        p.data.uniform_(-0.3, 0.3)
    ensemble = Ensemble(members).eval()
    src, tgt = pairs()
    for g, w in zip(forced_log_probs(ensemble, src, tgt), stepwise(ensemble, src, tgt)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_an_int8_model_is_scored_step_by_step_with_its_own_products():
    path = next(p for p in PAPER_CONFIGS if "rnnsearch" in p.stem)
    model = int8.quantize_for_decoding(tiny_model(path))
    src, tgt = pairs()
    for g, w in zip(forced_log_probs(model, src, tgt, batch_tokens=12), stepwise(model, src, tgt)):
        np.testing.assert_array_equal(g, w)
