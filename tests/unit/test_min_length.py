"""A minimum output length: the searches find the best output of at least N subwords, and
the length limit still ends every hypothesis with a finite score."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from test_search import sequence_logprob, tiny_model

from rnmt.search import beam_search, greedy_search, length_penalty
from rnmt.search.constraints import constrained_beam_search
from rnmt.search.min_length import with_min_length
from rnmt.search.sampling import Sampling, sample_search

WORDS = [1, 4, 5]  # tiny_model's words: every token but pad, BOS and EOS


def test_zero_turns_it_off():
    model = tiny_model()
    assert with_min_length(model, 0, torch.tensor([5])) is model


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_wide_beam_is_the_exhaustive_optimum_among_outputs_of_at_least_n_subwords(n, shared):
    model = tiny_model(seed=2)
    model.beam_shares_memory = shared  # one memory row per sentence, or one per hypothesis
    src = torch.tensor([[5, 6, 7, 3], [4, 8, 3, 0]])
    mask = src != 0
    max_len = torch.tensor([5, 5])  # at most 4 words + EOS
    hyps = beam_search(with_min_length(model, n, max_len), src, mask, max_len, beam=64, alpha=0.6)
    for b in range(2):
        s, m = src[b:b + 1, :int(mask[b].sum())], mask[b:b + 1, :int(mask[b].sum())]
        best, best_score = None, -math.inf
        for length in range(n, 5):
            for seq in itertools.product(WORDS, repeat=length):
                with torch.no_grad():
                    score = sequence_logprob(model, s, m, list(seq)) / length_penalty(float(length + 1), 0.6, "gnmt")
                if score > best_score:
                    best, best_score = list(seq), score
        assert hyps[b][0].tokens == best
        assert hyps[b][0].score == pytest.approx(best_score, abs=1e-4)


def _greedy_empty_source(model):
    """A source for which plain greedy search ends at once (tiny_model's EOS is often best)."""
    for a, b in itertools.product(range(1, 9), repeat=2):
        src = torch.tensor([[a, b, 3]])
        if greedy_search(model, src, src != 0, torch.tensor([8]))[0].tokens == []:
            return src
    pytest.skip("no two-word source ends greedy search at once for this model")


def test_greedy_takes_the_best_word_until_the_minimum_then_may_end():
    model = tiny_model(seed=0)
    src = _greedy_empty_source(model)
    mask, max_len = src != 0, torch.tensor([8])
    hyp = greedy_search(with_min_length(model, 2, max_len), src, mask, max_len)[0]
    # stepping the model alone and skipping EOS by hand for the first two words gives the same output
    memory = model.encode(src, mask)
    state, prev, out = model.init_state(memory), torch.tensor([model.bos_id]), []
    with torch.no_grad():
        for t in range(8):
            lp, state, _ = model.step(prev, state, memory)
            lp[0, model.pad_id] = lp[0, model.bos_id] = -math.inf
            if t < 2:
                lp[0, model.eos_id] = -math.inf
            tok = model.eos_id if t + 1 >= 8 else int(lp[0].argmax())
            if tok == model.eos_id:
                break
            out.append(tok)
            prev = torch.tensor([tok])
    assert len(hyp.tokens) >= 2 and hyp.tokens == out


def test_a_minimum_beyond_the_length_limit_still_ends_at_the_limit_with_a_finite_score():
    model = tiny_model()
    src = torch.tensor([[5, 6, 3], [4, 3, 0]])
    max_len = torch.tensor([3, 2])  # EOS included: at most 2 and 1 words
    for hyps in beam_search(with_min_length(model, 50, max_len), src, src != 0, max_len, beam=4):
        assert math.isfinite(hyps[0].score)
    hyps = beam_search(with_min_length(model, 50, max_len), src, src != 0, max_len, beam=4)
    assert [len(h[0].tokens) for h in hyps] == [2, 1]
    greedy = greedy_search(with_min_length(model, 50, max_len), src, src != 0, max_len)
    assert [len(h.tokens) for h in greedy] == [2, 1] and all(math.isfinite(h.score) for h in greedy)


def test_samples_and_constrained_outputs_honour_the_minimum():
    model = tiny_model(seed=1)
    src = torch.tensor([[5, 6, 7, 3]] * 3)
    max_len = torch.tensor([12, 12, 12])
    samples = sample_search(with_min_length(model, 3, max_len), src, src != 0, max_len,
                            Sampling(seed=7), keys=[0, 1, 2], n=4)
    assert all(len(h.tokens) >= 3 for hyps in samples for h in hyps)
    constrained = constrained_beam_search(with_min_length(model, 4, max_len), src, src != 0, max_len,
                                          [[[5]], [], [[4, 1]]], beam=4)
    assert all(len(hyps[0].tokens) >= 4 for hyps in constrained)
