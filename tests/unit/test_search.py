"""Beam search against exhaustive search, greedy search, and padding invariance."""

import itertools
import math

import pytest
import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.search import beam_search, greedy_search, length_penalty


def tiny_model(vocab=6, seed=0):
    torch.manual_seed(seed)
    cfg = ModelConfig(emb_size=8, hidden_size=8, src_vocab_size=9, tgt_vocab_size=vocab)
    model = build_model(cfg)
    for p in model.parameters():  # a peaked, non-trivial distribution
        torch.nn.init.uniform_(p, -1.5, 1.5)
    return model.eval()


def sequence_logprob(model, src, mask, tokens):
    """log P(tokens + EOS | src) by stepping the model."""
    memory = model.encode(src, mask)
    state = model.init_state(memory)
    prev, total = torch.tensor([model.bos_id]), 0.0
    for tok in list(tokens) + [model.eos_id]:
        lp, state, _ = model.step(prev, state, memory)
        total += float(lp[0, tok])
        prev = torch.tensor([tok])
    return total


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_wide_beam_returns_the_exhaustive_optimum(alpha):
    model = tiny_model()
    src = torch.tensor([[5, 6, 7, 3]])
    mask = src != 0
    max_len = 3  # at most 2 words + EOS
    words = [1, 4, 5]  # every token but pad, bos and eos
    best, best_score = None, -math.inf
    for n in range(max_len):
        for seq in itertools.product(words, repeat=n):
            with torch.no_grad():
                score = sequence_logprob(model, src, mask, seq) / length_penalty(float(n + 1), alpha, "gnmt")
            if score > best_score:
                best, best_score = list(seq), score
    hyp = beam_search(model, src, mask, torch.tensor([max_len]), beam=16, alpha=alpha)[0][0]
    assert hyp.tokens == best
    assert hyp.score == pytest.approx(best_score, abs=1e-5)


def test_beam_of_one_equals_greedy():
    model = tiny_model(vocab=12, seed=3)
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0], [8, 8, 8, 3, 0]])
    mask = src != 0
    max_len = torch.tensor([9, 7, 8])
    greedy = greedy_search(model, src, mask, max_len)
    beam = beam_search(model, src, mask, max_len, beam=1, alpha=0.6)
    assert [g.tokens for g in greedy] == [b[0].tokens for b in beam]
    for g, b in zip(greedy, beam):
        assert g.logprob == pytest.approx(b[0].logprob, abs=1e-5)


def test_nbest_is_sorted_and_respects_max_len():
    model = tiny_model(vocab=12, seed=5)
    src = torch.tensor([[5, 6, 7, 8, 3]])
    hyps = beam_search(model, src, src != 0, torch.tensor([4]), beam=4, nbest=4)[0]
    assert len(hyps) == 4
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert all(len(h.tokens) + 1 <= 4 for h in hyps)
    assert len({tuple(h.tokens) for h in hyps}) == 4


def test_padding_does_not_change_search_results():
    model = tiny_model(vocab=12, seed=7)
    sentences = [[5, 6, 7, 8, 3], [4, 5, 3], [8, 3]]
    batch = torch.zeros(3, 5, dtype=torch.long)
    for i, s in enumerate(sentences):
        batch[i, : len(s)] = torch.tensor(s)
    max_len = torch.tensor([7, 7, 7])
    together = beam_search(model, batch, batch != 0, max_len, beam=3, nbest=3)
    for i, s in enumerate(sentences):
        alone = beam_search(model, torch.tensor([s]), torch.ones(1, len(s), dtype=torch.bool),
                            max_len[:1], beam=3, nbest=3)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in together[i]], abs=1e-5)


def test_attention_is_returned_per_output_token():
    model = tiny_model(vocab=12, seed=2)
    src = torch.tensor([[5, 6, 7, 3]])
    hyp = beam_search(model, src, src != 0, torch.tensor([6]), beam=2, return_attention=True)[0][0]
    assert hyp.attention.shape == (len(hyp.tokens) + 1, 4)
    assert torch.allclose(hyp.attention.sum(-1), torch.ones(len(hyp.tokens) + 1), atol=1e-5)


@pytest.mark.parametrize("arch", ["rnnsearch", "rnnsearch-minus", "atr-rnnsearch", "deep-rnnsearch", "dtmt",
                                  "luong:dot", "luong:general", "luong:concat", "luong:local-p"])
def test_shared_memory_search_equals_repeated_memory_search(arch, monkeypatch):
    """Models that keep one memory row per sentence in beam search find the same
    hypotheses with the same scores as with the memory copied per hypothesis."""
    from rnmt.models.base import TranslationModel

    options = dict(attention_heads=2, cell="lgru", options={"enc_depth": 2, "query_depth": 2, "dec_depth": 2}) \
        if arch == "dtmt" else {}
    if arch.startswith("luong:"):
        arch, options = "luong", {"options": {"attention": arch.split(":")[1], "window": 1}}
    torch.manual_seed(4)
    model = build_model(ModelConfig(arch=arch, emb_size=8, hidden_size=8, src_vocab_size=12,
                                    tgt_vocab_size=12, **options))
    for p in model.parameters():
        torch.nn.init.uniform_(p, -1.0, 1.0)
    model.eval()
    assert model.beam_shares_memory
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0], [9, 3, 0, 0, 0], [7, 7, 6, 3, 0]])
    max_len = torch.tensor([8, 3, 6, 7])
    shared = beam_search(model, src, src != 0, max_len, beam=3, nbest=3, return_attention=True)
    monkeypatch.setattr(type(model), "beam_shares_memory", TranslationModel.beam_shares_memory)
    copied = beam_search(model, src, src != 0, max_len, beam=3, nbest=3, return_attention=True)
    for a, b in zip(shared, copied):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
        for ha, hb in zip(a, b):
            torch.testing.assert_close(ha.attention, hb.attention, atol=1e-5, rtol=1e-5)


def test_a_search_past_every_length_limit_is_an_error_not_a_hang(monkeypatch):
    """Only the forced end of sentence at the length limit ends a sentence that never
    chooses EOS: with that rule broken, the search must stop with an error."""
    from rnmt.search import beam as beam_module
    from rnmt.search.min_length import MinLength

    model = tiny_model(vocab=12, seed=3)
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0]])
    never_ends = MinLength(model, torch.tensor([1000, 1000]))  # EOS forbidden throughout
    original, calls = beam_module._step, []

    def without_the_limit(model, step, beams, specials, at_limit):
        calls.append(1)
        assert len(calls) < 100, "the search did not stop at its length limit"
        return original(model, step, beams, specials, None)

    monkeypatch.setattr(beam_module, "_step", without_the_limit)
    with pytest.raises(RuntimeError, match="passed the longest length limit"):
        beam_search(never_ends, src, src != 0, torch.tensor([6, 4]), beam=3)
    assert len(calls) == 6
