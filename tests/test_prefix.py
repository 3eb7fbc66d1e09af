"""Target prefixes: outputs start with them, and the search after them is still exact."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from test_search import sequence_logprob, tiny_model

import rnmt
from rnmt.search import beam_search, length_penalty
from rnmt.search.prefix import restore_prefix, with_prefixes

LINES = ["Y dijo Dios: Sea la luz.", "Y vio Dios que la luz era buena.", "", "Y llamó Dios á la luz Día"]
PREFIXES = ["And God said", "", "Then", "It   was"]


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


def test_characters_outside_the_vocabulary_come_back_as_given():
    assert restore_prefix(" ⁇ mega and more", " ⁇ mega and", "Ωmega  and ") == "Ωmega and more"
    assert restore_prefix("something else", "And", "And") == "something else"  # not a prefix: left alone


def test_prefix_count_must_match_lines(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(rnmt.UserError, match="3 prefixes for 4 lines"):
        model.translate(LINES, prefix=PREFIXES[:3])
