"""Target prefixes: the search after them is still exact, and they fit the length limit."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from test_search import sequence_logprob, tiny_model

from rnmt.search import beam_search, length_penalty
from rnmt.search.prefix import restore_prefix, with_prefixes


def test_wide_beam_after_a_prefix_is_the_exhaustive_optimum():
    model = tiny_model()
    src = torch.tensor([[5, 6, 7, 3], [4, 5, 3, 0]])
    mask = src != 0
    prefixes = [[4, 5], []]
    forced, max_len = with_prefixes(model, prefixes, torch.tensor([3, 3]), torch.device("cpu"))
    assert max_len.tolist() == [3, 3]  # already room for the prefix and EOS
    hyps = beam_search(forced, src, mask, max_len, beam=16, alpha=0.6)
    for b, prefix in enumerate(prefixes):
        best, best_score = None, -math.inf
        for n in range(3 - len(prefix)):
            for rest in itertools.product([1, 4, 5], repeat=n):
                seq = prefix + list(rest)
                with torch.no_grad():
                    lp = sequence_logprob(model, src[b:b + 1, :int(mask[b].sum())], mask[b:b + 1, :int(mask[b].sum())],
                                          seq)
                score = lp / length_penalty(float(len(seq) + 1), 0.6, "gnmt")
                if score > best_score:
                    best, best_score = seq, score
        assert hyps[b][0].tokens == best
        assert hyps[b][0].score == pytest.approx(best_score, abs=1e-4)


def test_a_prefix_longer_than_the_length_limit_still_fits():
    model = tiny_model()
    forced, max_len = with_prefixes(model, [[4, 5, 4, 5]], torch.tensor([2]), torch.device("cpu"))
    src = torch.tensor([[5, 6, 3]])
    hyp = beam_search(forced, src, src != 0, max_len, beam=3)[0][0]
    assert max_len.tolist() == [5] and hyp.tokens == [4, 5, 4, 5]


def test_characters_outside_the_vocabulary_come_back_as_given():
    assert restore_prefix(" ⁇ mega and more", " ⁇ mega and", "Ωmega  and ") == "Ωmega and more"
    assert restore_prefix("something else", "And", "And") == "something else"  # not a prefix: left alone
