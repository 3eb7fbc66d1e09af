"""The search step chosen straight from the logits (`rnmt.search.fused_step`, the C++
`beam_candidates`) against the plain step: log_softmax, masks, `best_extensions`."""

from __future__ import annotations

import pytest
import torch
from test_search import tiny_model

from rnmt import kernels
from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.models.base import StepLogits
from rnmt.search import beam_search, fused_step, greedy_search
from rnmt.search.beam import one_topk_extensions
from rnmt.search.ensemble import Ensemble
from rnmt.search.min_length import with_min_length

pytestmark = pytest.mark.usefixtures("kernels_on")
EOS = 3
SPECIALS = torch.tensor([0, 1])


def reference(logits, scores, k, only_eos=None, no_eos=None):
    """The plain step's selection: log_softmax, padding and BOS out, the length limit, one topk."""
    lp = torch.log_softmax(logits, -1)
    lp[:, SPECIALS] = float("-inf")
    if no_eos is not None:
        lp[no_eos, EOS] = float("-inf")
    if only_eos is not None:
        eos = lp[only_eos, EOS]
        lp[only_eos] = float("-inf")
        lp[only_eos, EOS] = eos
    return one_topk_extensions(scores, lp, k)


def fused(logits, scores, k, only_eos=None, no_eos=None):
    return fused_step.best_extensions(StepLogits(logits, {}, {}, no_eos), scores, k, SPECIALS, EOS, only_eos)


def assert_same(got, want, sentences):
    g_val, g_beam, g_tok = (x[sentences] for x in got)
    w_val, w_beam, w_tok = (x[sentences] for x in want)
    finite = torch.isfinite(w_val)
    assert torch.equal(torch.isfinite(g_val), finite)
    torch.testing.assert_close(g_val[finite], w_val[finite], atol=1e-5, rtol=1e-6)
    assert torch.equal(g_beam[finite], w_beam[finite]) and torch.equal(g_tok[finite], w_tok[finite])


@pytest.mark.parametrize("b,K,V", [(1, 5, 8000), (7, 5, 1000), (3, 4, 8003), (2, 1, 17), (4, 2, 6)])
def test_equals_log_softmax_and_one_topk(b, K, V):
    torch.manual_seed(V)
    logits = torch.randn(b * K, V) * 3
    scores = torch.randn(b, K) * 3
    k = min(2 * K, K * V)
    assert_same(fused(logits, scores, k), reference(logits, scores, k), slice(None))


def test_rows_not_searching_are_skipped_and_dead_sentences_give_real_tokens():
    torch.manual_seed(1)
    b, K, V = 4, 5, 500
    logits, scores = torch.randn(b * K, V) * 3, torch.randn(b, K)
    scores[0, 1:] = float("-inf")  # the first step: only the start hypothesis
    scores[2] = float("-inf")  # a finished sentence waiting for compaction
    got = fused(logits, scores, 2 * K)
    assert_same(got, reference(logits, scores, 2 * K), [0, 1, 3])
    assert torch.isinf(got[0][2]).all() and int(got[1].max()) < K and int(got[2].max()) < V
    assert set(got[1][0].tolist()) == {0}  # only the live hypothesis extends


def test_length_limit_and_minimum_length_rows():
    torch.manual_seed(2)
    b, K, V = 3, 4, 300
    logits, scores = torch.randn(b * K, V) * 3, torch.randn(b, K)
    only_eos = torch.zeros(b * K, dtype=torch.bool)
    only_eos[:K] = True  # sentence 0 at its limit: its K hypotheses may only end
    no_eos = torch.zeros(b * K, dtype=torch.bool)
    no_eos[K:2 * K + 1] = True  # sentence 1 (and one row of 2) below its minimum
    got = fused(logits, scores, 2 * K, only_eos, no_eos)
    assert_same(got, reference(logits, scores, 2 * K, only_eos, no_eos), slice(None))
    assert (got[2][0, :K] == EOS).all() and torch.isinf(got[0][0, K:]).all()
    assert (got[2][1] != EOS).all()


def test_specials_are_never_chosen_and_ties_keep_index_order():
    b, K, V = 1, 2, 40
    logits = torch.zeros(b * K, V)  # every word equally likely
    got = fused(logits, torch.zeros(b, K), 2 * K)
    assert got[1].tolist() == [[0, 0, 0, 0]] and got[2].tolist() == [[2, 3, 4, 5]]


def test_greedy_and_beam_search_find_what_the_plain_step_finds(monkeypatch):
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0], [2, 3, 0, 0, 0]])
    mask, max_len = src != 0, torch.tensor([9, 4, 6])
    for arch in ("rnnsearch", "atr-rnnsearch", "seq2seq", "transformer"):
        torch.manual_seed(7)
        model = build_model(ModelConfig(arch=arch, emb_size=8, hidden_size=8, src_vocab_size=9, tgt_vocab_size=30,
                                        **({"attention_heads": 2, "options": {"ffn_size": 16}}
                                           if arch == "transformer" else {})))
        for p in model.parameters():
            torch.nn.init.uniform_(p, -1.0, 1.0)
        model.eval()
        for searched in (model, with_min_length(model, 2, max_len)):
            assert fused_step.applies(searched, src)
            runs = {}
            for name in ("fused", "plain"):
                if name == "plain":
                    monkeypatch.setattr(fused_step, "applies", lambda *a: False)
                runs[name] = (beam_search(searched, src, mask, max_len, beam=4, nbest=4),
                              greedy_search(searched, src, mask, max_len))
                monkeypatch.undo()
            (beams, greedy), (plain_beams, plain_greedy) = runs["fused"], runs["plain"]
            assert [[h.tokens for h in s] for s in beams] == [[h.tokens for h in s] for s in plain_beams], arch
            for s, p in zip(beams, plain_beams):
                assert [h.score for h in s] == pytest.approx([h.score for h in p], abs=1e-5)
            assert [h.tokens for h in greedy] == [h.tokens for h in plain_greedy], arch
            assert [h.logprob for h in greedy] == pytest.approx([h.logprob for h in plain_greedy], abs=1e-5)


def test_not_used_where_the_log_probabilities_are_the_searchs_own_or_without_kernels():
    model = tiny_model()
    src = torch.tensor([[5, 3]])
    assert fused_step.applies(model, src)
    assert not fused_step.applies(Ensemble([model, tiny_model(seed=1)]), src)
    with kernels.use(False):
        assert not fused_step.applies(model, src)
