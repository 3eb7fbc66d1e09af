"""Lexical shortlists: Model 1 finds a dictionary, a cut output layer gives the full
model's logits at its rows, and a shortlist of the whole vocabulary searches exactly as the
full model does."""

from __future__ import annotations

import random

import pytest
import torch
from test_models_zoo import PAPER_CONFIGS, TGT_V, _name, batch, tiny_model

from rnmt.data import lexicon
from rnmt.int8 import quantize_for_decoding
from rnmt.search.beam import beam_search
from rnmt.search.ensemble import Ensemble
from rnmt.search.shortlist import SPECIALS, Shortlist, ShortlistModel, restrict_output
from rnmt_runtime.errors import ExportError

CONFIG = next(p for p in PAPER_CONFIGS if p.stem == "rnnsearch-gru")


def test_model1_finds_the_dictionary_of_a_shuffled_corpus():
    """Source word i always has target word 20 + i somewhere in its sentence, in any order,
    beside frequent function words; Model 1 puts 20 + i first for every i."""
    rng = random.Random(0)
    pairs = []
    for _ in range(400):
        words = rng.sample(range(4, 14), 4)
        target = [20 + w for w in words] + [40, 41, 40]  # function words in every sentence
        rng.shuffle(target)
        pairs.append((words, target))
    lex = lexicon.model1(pairs, 14, 42, iterations=8)
    best = lex.best(3)
    assert [b[0][0] for b in best[4:14]] == [20 + w for w in range(4, 14)]
    assert all(b[0][1] > 0.5 for b in best[4:14])
    assert best[:4] == [[], [], [], []]  # never seen: nothing listed
    assert lex.frequent(2, SPECIALS) == [40, 41]


def test_chunks_of_the_corpus_change_nothing(monkeypatch):
    rng = random.Random(1)
    pairs = [([rng.randrange(4, 30) for _ in range(rng.randrange(1, 8))],
              [rng.randrange(4, 30) for _ in range(rng.randrange(0, 8))]) for _ in range(60)]
    whole = lexicon.model1(pairs, 30, 30, iterations=3)
    monkeypatch.setattr(lexicon, "CHUNK_PAIRS", 10)
    chunked = lexicon.model1(pairs, 30, 30, iterations=3)
    assert torch.equal(whole.source, chunked.source) and torch.equal(whole.target, chunked.target)
    assert torch.allclose(whole.prob, chunked.prob, atol=1e-6)
    totals = torch.zeros(31, dtype=torch.float64).index_add_(0, whole.source, whole.prob.double())
    seen = totals > 0
    assert torch.allclose(totals[seen], torch.ones(int(seen.sum()), dtype=torch.float64), atol=1e-5)


def test_rows_hold_the_specials_the_frequent_words_and_each_sources_best():
    import numpy as np

    best = [np.zeros(0, dtype=np.int64) for _ in range(10)]
    best[5], best[6] = np.array([17, 12, 9]), np.array([11])
    shortlist = Shortlist(np.array([15, 14, 13]), best, n_frequent=2, n_best=2)
    src = torch.tensor([[5, 6, 3], [6, 3, 0]])
    assert shortlist.rows(src).tolist() == [0, 1, 2, 3, 11, 12, 14, 15, 17]
    assert shortlist.rows(src, also=[16]).tolist() == [0, 1, 2, 3, 11, 12, 14, 15, 16, 17]
    assert shortlist.with_sizes(0, 0).rows(src).tolist() == list(SPECIALS)
    with pytest.raises(ExportError, match="at least 0"):  # the runtime's one-line error (rnmt_runtime.shortlist)
        shortlist.with_sizes(-1, 2)


def _step_logits(model, rows=None, device="cpu"):
    src, mask, tgt_in = batch(device=device)
    prev = tgt_in[:, 1]
    if rows is not None:
        prev = torch.searchsorted(rows.to(device), prev.contiguous())
    memory = model.encode(src, mask)
    with torch.no_grad():
        return model.step_logits(prev, model.init_state(memory), memory).logits


@pytest.mark.on_device
@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_a_cut_output_layer_gives_the_full_logits_at_its_rows(path, device):
    model = tiny_model(path).to(device)
    if not model.offers_step_logits:
        pytest.skip("no step_logits")
    _, _, tgt_in = batch()
    full = _step_logits(model, device=device)
    vocab = full.size(1)  # the transformer that ties every embedding has the source's
    rows = torch.unique(torch.cat([torch.tensor(SPECIALS), tgt_in[:, 1], torch.tensor([vocab - 1, 7])]))
    cut = _step_logits(ShortlistModel(model, rows, vocab), rows, device)
    assert cut.shape == (full.size(0), len(rows))
    torch.testing.assert_close(cut, full[:, rows.to(device)], rtol=1e-5, atol=1e-5)


def test_the_model_itself_keeps_its_whole_output_layer():
    model = tiny_model(CONFIG)
    before = model.output if hasattr(model, "output") else model.readout.output
    restrict_output(model, torch.tensor([0, 1, 2, 3, 9]), TGT_V)
    after = model.output if hasattr(model, "output") else model.readout.output
    assert after is before and after.out_features == TGT_V
    assert _step_logits(model).size(1) == TGT_V


def test_int8_and_ensembles_are_cut_too():
    src, mask, tgt_in = batch()
    prev = tgt_in[:, 1]
    rows = torch.unique(torch.cat([torch.tensor([0, 1, 2, 3, 5, 8, 13]), prev]))
    quantized = quantize_for_decoding(tiny_model(CONFIG))
    torch.testing.assert_close(_step_logits(ShortlistModel(quantized, rows, TGT_V), rows),
                               _step_logits(quantized)[:, rows], rtol=1e-5, atol=1e-5)
    pair = Ensemble([tiny_model(CONFIG), tiny_model(PAPER_CONFIGS[0])])
    memory = pair.encode(src, mask)
    with torch.no_grad():
        full, _, _ = pair.step(prev, pair.init_state(memory), memory)
        cut_model = ShortlistModel(pair, rows, TGT_V)
        shortlisted_prev = torch.searchsorted(cut_model.rows, prev.contiguous())
        cut, _, _ = cut_model.step(shortlisted_prev, pair.init_state(memory), memory)
    members = [torch.log_softmax(_step_logits(m)[:, cut_model.rows], -1) for m in pair.models]
    torch.testing.assert_close(cut, torch.stack(members).mean(0), rtol=1e-5, atol=1e-5)
    assert full.size(1) == TGT_V


def test_a_shortlist_of_the_whole_vocabulary_searches_as_the_full_model():
    model = tiny_model(CONFIG)
    src, mask, _ = batch()
    max_len = torch.tensor([6, 6, 6])
    full = beam_search(model, src, mask, max_len, beam=3, nbest=2)
    whole = ShortlistModel(model, torch.arange(TGT_V), TGT_V)
    cut = beam_search(whole, src, mask, max_len, beam=3, nbest=2)
    for a, b in zip(full, cut):
        assert [h.tokens for h in a] == [whole.to_vocabulary(h.tokens) for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def test_a_shortlist_without_the_specials_is_refused():
    with pytest.raises(ValueError, match="special"):
        ShortlistModel(tiny_model(CONFIG), torch.tensor([1, 2, 3, 4]), TGT_V)
