"""Blocking repeated n-grams: the blocked words are exactly those that would repeat an
n-gram, and the searches then find the best output without repeats."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from test_search import sequence_logprob, tiny_model

from rnmt.search import beam_search, greedy_search, length_penalty
from rnmt.search.prefix import with_prefixes
from rnmt.search.repeats import blocked_words, with_repeats_blocked
from rnmt.search.sampling import Sampling, sample_search

WORDS = [1, 4, 5]  # tiny_model's words: every token but pad, BOS and EOS


def repeats(tokens, n):
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_blocked_words_are_those_that_repeat_an_ngram(n):
    gen = torch.Generator().manual_seed(n)
    V, L = 5, 9
    history = torch.randint(0, V, (64, L), generator=gen)
    position = torch.randint(0, L, (64,), generator=gen)
    blocked = blocked_words(history, position, n, V)
    for r in range(64):
        out = history[r, :int(position[r]) + 1].tolist()
        expected = [_completes_seen(out, w, n) for w in range(V)]
        assert blocked[r].tolist() == expected, (out, n)


def _completes_seen(out, w, n):
    """Whether out + [w] ends in an n-gram that occurs earlier in out + [w]."""
    seq = out + [w]
    if len(seq) < n:
        return False
    last = tuple(seq[-n:])
    return any(tuple(seq[i:i + n]) == last for i in range(len(seq) - n))


def test_zero_turns_blocking_off():
    model = tiny_model()
    assert with_repeats_blocked(model, 0, torch.tensor([5])) is model


@pytest.mark.parametrize("n", [1, 2])
def test_wide_beam_with_blocking_is_the_exhaustive_optimum_without_repeats(n):
    model = tiny_model()
    src = torch.tensor([[5, 6, 7, 3]])
    mask = src != 0
    max_len = torch.tensor([4])  # at most 3 words + EOS
    hyps = beam_search(with_repeats_blocked(model, n, max_len), src, mask, max_len, beam=32, alpha=0.6)
    best, best_score = None, -math.inf
    for length in range(4):
        for seq in itertools.product(WORDS, repeat=length):
            if repeats(list(seq), n):
                continue
            with torch.no_grad():
                score = sequence_logprob(model, src, mask, list(seq)) / length_penalty(float(length + 1), 0.6, "gnmt")
            if score > best_score:
                best, best_score = list(seq), score
    assert hyps[0][0].tokens == best
    assert hyps[0][0].score == pytest.approx(best_score, abs=1e-4)
    assert not repeats(hyps[0][0].tokens, n)


def test_greedy_with_blocking_takes_the_best_word_that_repeats_nothing():
    model = tiny_model(seed=3)
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0]])
    mask = src != 0
    max_len = torch.tensor([12, 12])
    hyps = greedy_search(with_repeats_blocked(model, 2, max_len), src, mask, max_len)
    for b, hyp in enumerate(hyps):
        assert not repeats(hyp.tokens, 2)
        # stepping the model alone and skipping blocked words by hand gives the same output
        n_src = int(mask[b].sum())
        memory = model.encode(src[b:b + 1, :n_src], mask[b:b + 1, :n_src])
        state, prev, out = model.init_state(memory), torch.tensor([model.bos_id]), []
        with torch.no_grad():
            for t in range(12):
                lp, state, _ = model.step(prev, state, memory)
                lp[0, model.pad_id] = lp[0, model.bos_id] = -math.inf
                if t + 1 >= 12:
                    tok = model.eos_id
                else:
                    order = lp[0].argsort(descending=True).tolist()
                    tok = next(w for w in order if w == model.eos_id or not repeats([model.bos_id] + out + [w], 2))
                if tok == model.eos_id:
                    break
                out.append(tok)
                prev = torch.tensor([tok])
        assert hyp.tokens == out


def test_a_forced_prefix_that_repeats_itself_is_still_honoured():
    model = tiny_model()
    src = torch.tensor([[5, 6, 3]])
    forced, max_len = with_prefixes(model, [[4, 5, 4, 5]], torch.tensor([8]), torch.device("cpu"))
    hyp = beam_search(with_repeats_blocked(forced, 2, max_len), src, src != 0, max_len, beam=4)[0][0]
    assert hyp.tokens[:4] == [4, 5, 4, 5]
    assert not any(tuple(hyp.tokens[i:i + 2]) in {(4, 5)} for i in range(4, len(hyp.tokens) - 1))


def test_samples_repeat_no_ngram():
    model = tiny_model(seed=1)
    src = torch.tensor([[5, 6, 7, 3]] * 3)
    max_len = torch.tensor([15, 15, 15])
    samples = sample_search(with_repeats_blocked(model, 2, max_len), src, src != 0, max_len,
                            Sampling(seed=7), keys=[0, 1, 2], n=4)
    assert sum(len(h.tokens) for hyps in samples for h in hyps) > 12
    assert not any(repeats(h.tokens, 2) for hyps in samples for h in hyps)
