"""Sampling: the right distribution, the cuts, and its options."""

from __future__ import annotations

import pytest
import torch
from test_search import tiny_model

from rnmt.errors import UserError
from rnmt.search import greedy_search
from rnmt.search.sampling import Sampling, draw, row_streams, sample_search, sampling_options, uniforms


def test_uniforms_are_uniform_in_the_unit_interval():
    streams = row_streams(7, range(500), 4, torch.device("cpu"))
    u = torch.cat([uniforms(streams, t) for t in range(10)])
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.01
    counts = torch.histc(u, bins=10, min=0.0, max=1.0)
    assert float(counts.min()) > 0.9 * len(u) / 10  # no bin starved
    assert len(set(streams.tolist())) == len(streams)  # every row its own stream


def test_draws_follow_the_distribution_and_its_cuts():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    rows = 20000
    log_probs = probs.log().expand(rows, -1)
    u = uniforms(row_streams(3, range(rows), 1, torch.device("cpu")), 0)
    freq = torch.bincount(draw(log_probs, Sampling(), u), minlength=4).float() / rows
    assert torch.allclose(freq, probs, atol=0.015)
    top2 = torch.bincount(draw(log_probs, Sampling(topk=2), u), minlength=4).float() / rows
    assert torch.allclose(top2, torch.tensor([0.625, 0.375, 0.0, 0.0]), atol=0.015)
    nucleus = torch.bincount(draw(log_probs, Sampling(topp=0.7), u), minlength=4).float() / rows
    assert nucleus[2:].sum() == 0 and nucleus[1] > 0.3  # 0.5 + 0.3 reach 0.7: two words kept
    cold = torch.bincount(draw(log_probs, Sampling(temperature=0.25), u), minlength=4).float() / rows
    assert cold[0] > 0.8  # a low temperature sharpens towards the mode


def test_epsilon_drops_the_words_below_it_and_keeps_the_best_word():
    rows = 20000
    u = uniforms(row_streams(4, range(rows), 1, torch.device("cpu")), 0)
    log_probs = torch.tensor([0.5, 0.3, 0.15, 0.05]).log().expand(rows, -1)
    freq = torch.bincount(draw(log_probs, Sampling(epsilon=0.1), u), minlength=4).float() / rows
    assert torch.allclose(freq, torch.tensor([0.5, 0.3, 0.15, 0.0]) / 0.95, atol=0.015)  # 0.05 < 0.1: cut
    assert torch.equal(draw(log_probs, Sampling(epsilon=0.0), u), draw(log_probs, Sampling(), u))  # 0: off
    # every word below epsilon: the best one still stands, never an empty distribution
    assert set(draw(log_probs, Sampling(epsilon=0.9), u).tolist()) == {0}
    # the cut reads the whole distribution (after the temperature), before top-k renormalises
    flat = torch.tensor([0.26, 0.25, 0.25, 0.24]).log().expand(rows, -1)
    kept = draw(flat, Sampling(epsilon=0.245, topk=3), u)
    assert set(kept.tolist()) == {0, 1, 2}
    hot = draw(log_probs, Sampling(epsilon=0.1, temperature=100.0), u)  # flattened: every word above 0.1
    assert set(hot.tolist()) == {0, 1, 2, 3}


@pytest.mark.parametrize("temperature, expected", [
    (float("inf"), [1 / 3, 1 / 3, 1 / 3, 0.0]), (1e300, [1 / 3, 1 / 3, 1 / 3, 0.0]),  # uniform over allowed words
    (1e-46, [1.0, 0.0, 0.0, 0.0]), (1e-300, [1.0, 0.0, 0.0, 0.0]),  # the best word
])
def test_extreme_temperatures_give_their_limits_not_nan(temperature, expected):
    # dividing the log-probabilities themselves gave NaN (inf) or all -inf (tiny): no word
    # was ever drawn, not even the forced end of sentence, and the search never ended
    rows = 30000
    log_probs = torch.tensor([-0.6, -1.2, -2.0, float("-inf")]).expand(rows, -1)
    u = uniforms(row_streams(5, range(rows), 1, torch.device("cpu")), 0)
    freq = torch.bincount(draw(log_probs, Sampling(temperature=temperature), u), minlength=4).float() / rows
    assert torch.allclose(freq, torch.tensor(expected), atol=0.015)


@pytest.mark.parametrize("temperature", [float("inf"), 1e300, 1e-46])
def test_sampling_at_any_temperature_ends_within_the_length_limit(temperature):
    model = tiny_model(vocab=12, seed=3)
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0]])
    max_len = torch.tensor([9, 7])
    samples = sample_search(model, src, src != 0, max_len, Sampling(temperature=temperature), keys=[0, 1], n=3)
    assert [len(s) for s in samples] == [3, 3]
    assert all(len(h.tokens) < int(limit) for hyps, limit in zip(samples, max_len) for h in hyps)


def test_topk_of_one_is_greedy_search():
    model = tiny_model(vocab=12, seed=3)
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0], [8, 8, 8, 3, 0]])
    mask, max_len = src != 0, torch.tensor([9, 7, 8])
    greedy = greedy_search(model, src, mask, max_len)
    sampled = sample_search(model, src, mask, max_len, Sampling(topk=1, temperature=3.0), keys=[0, 1, 2], n=2)
    for g, samples in zip(greedy, sampled):
        assert [s.tokens for s in samples] == [g.tokens, g.tokens]
        assert samples[0].logprob == pytest.approx(g.logprob, abs=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    ({"sample": False, "topk": 3}, "topk applies only with sample"),
    ({"sample": False, "seed": 1, "topp": 0.5}, "topp, seed apply only with sample"),
    ({"sample": True, "beam": 4}, "does not combine with beam"),
    ({"sample": True, "greedy": True}, "does not combine with greedy"),
    ({"sample": True, "topk": 0}, "topk must be at least 1"),
    ({"sample": True, "topp": 1.5}, "topp must be in (0, 1]"),
    ({"sample": True, "temperature": 0.0}, "temperature must be a number above 0 (inf included), got 0.0"),
    ({"sample": True, "temperature": float("nan")}, "temperature must be a number above 0 (inf included), got nan"),
    ({"sample": True, "seed": -1}, "seed must be an integer from 0 to 4294967295, got -1"),
    ({"sample": False, "epsilon": 0.02}, "epsilon applies only with sample"),
    ({"sample": True, "epsilon": 1.0}, "epsilon must be in [0, 1), got 1.0"),
    ({"sample": True, "epsilon": float("nan")}, "epsilon must be in [0, 1), got nan"),
    ({"sample": True, "seed": 2 ** 32}, "seed must be an integer from 0 to 4294967295, got 4294967296"),
])
def test_sampling_options_are_checked(kwargs, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        sampling_options(**kwargs)
    assert sampling_options(True, seed=9) == Sampling(seed=9)
    # an infinite temperature is a uniform draw among the allowed words (draw), as documented
    assert sampling_options(True, temperature=float("inf")).temperature == float("inf")
