"""Terminology constraints: every phrase appears in every output, and without constraints
the search is the plain beam search."""

from __future__ import annotations

import random

import pytest
import torch
from test_search import tiny_model

from rnmt.search import beam_search
from rnmt.search.constraints import Phrase, SentenceConstraints, constrained_beam_search, encode_constraints
from rnmt.search.prefix import with_prefixes

WORDS = [1, 4, 5, 6, 7, 8, 9, 10, 11]  # the tiny model's subwords but pad, bos and eos


def contains(tokens, phrase) -> bool:
    n = len(phrase)
    return any(list(tokens[i:i + n]) == list(phrase) for i in range(len(tokens) - n + 1))


def batch(sentences):
    src = torch.zeros(len(sentences), max(len(s) for s in sentences), dtype=torch.long)
    for i, s in enumerate(sentences):
        src[i, :len(s)] = torch.tensor(s)
    return src, src != 0


SOURCES = [[5, 6, 7, 8, 3], [4, 5, 3], [8, 8, 6, 5, 4, 3], [7, 3]]  # source vocabulary: 9


def test_the_automaton_follows_overlapping_and_restarted_matches():
    phrase = Phrase([4, 4, 5])
    q = 0
    for token in [4, 4, 4, 5]:  # "a a a b" contains "a a b": the third a restarts the match at 2
        q = phrase.advance(q, token)
    assert q == 3
    assert phrase.advance(3, 9) == 3  # met stays met
    abab = Phrase([4, 5, 4, 6])
    q = 0
    for token in [4, 5, 4, 5, 4, 6]:
        q = abab.advance(q, token)
    assert q == 4


def test_needed_falls_by_one_with_the_forced_subword():
    sc = SentenceConstraints([Phrase([4, 5, 6]), Phrase([7, 8])])
    state = sc.advance(sc.advance(sc.start(), 4), 5)
    assert sc.needed(state) == 1 + 2
    assert sc.needed(sc.advance(state, 6)) == 2
    assert sc.safe_tokens(state, 2) == [6]  # only finishing the match leaves room for the other phrase


@pytest.mark.parametrize("seed", range(12))
def test_every_phrase_appears_in_every_output(seed):
    rng = random.Random(seed)
    model = tiny_model(vocab=12, seed=seed)
    src, mask = batch(SOURCES)
    constraints = [[[rng.choice(WORDS) for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(0, 3))]
                   for _ in SOURCES]
    limits = [6, 4, 7, 3]
    hyps = constrained_beam_search(model, src, mask, torch.tensor(limits), constraints, beam=4, nbest=4)
    for phrases, nbest, limit in zip(constraints, hyps, limits):
        assert nbest, "every sentence ends with hypotheses"
        for h in nbest:
            assert all(contains(h.tokens, p) for p in phrases), (h.tokens, phrases)
            assert len(h.tokens) + 1 <= max(limit, sum(len(p) for p in phrases) + 1)


@pytest.mark.parametrize("phrases", [
    [[4, 4, 5]],  # overlapping with itself: "a a b"
    [[4, 5, 6], [5, 6, 7]],  # two phrases sharing subwords
    [[4, 5], [5, 4], [4]],  # overlapping each other and contained in one another
    [[9, 9, 9, 9, 9, 9, 9, 9]],  # longer than the length limit: it is raised
])
def test_hard_phrases_are_met(phrases):
    model = tiny_model(vocab=12, seed=11)
    src, mask = batch(SOURCES[:2])
    for beam in (1, 3, 6):
        hyps = constrained_beam_search(model, src, mask, torch.tensor([4, 4]), [phrases, phrases], beam=beam,
                                       nbest=beam)
        for nbest in hyps:
            assert nbest and all(contains(h.tokens, p) for h in nbest for p in phrases)


def test_a_constraint_can_be_the_whole_output():
    model = tiny_model(vocab=12, seed=2)
    src, mask = batch(SOURCES[:1])
    phrase = [6, 7, 8, 9]
    hyp = constrained_beam_search(model, src, mask, torch.tensor([len(phrase) + 1]), [[phrase]], beam=3)[0][0]
    assert hyp.tokens == phrase  # the limit leaves room for nothing else


@pytest.mark.parametrize("beam,nbest", [(1, 1), (4, 1), (5, 3)])
def test_without_constraints_it_is_the_plain_beam_search(beam, nbest):
    model = tiny_model(vocab=12, seed=5)
    src, mask = batch(SOURCES)
    max_len = torch.tensor([8, 6, 9, 4])
    plain = beam_search(model, src, mask, max_len, beam=beam, nbest=nbest)
    for constraints in ([[], [], [], []], [[], [[4, 5]], [], [[9]]]):  # alone, and beside constrained sentences
        ours = constrained_beam_search(model, src, mask, max_len, constraints, beam=beam, nbest=nbest)
        for b in range(len(SOURCES)):
            if constraints[b]:
                continue
            assert [h.tokens for h in ours[b]] == [h.tokens for h in plain[b]]
            assert [h.score for h in ours[b]] == pytest.approx([h.score for h in plain[b]], abs=1e-5)


def test_scores_are_the_length_normalised_log_probabilities():
    from test_search import sequence_logprob

    from rnmt.search import length_penalty

    model = tiny_model(vocab=12, seed=8)
    src, mask = batch(SOURCES[:1])
    hyp = constrained_beam_search(model, src, mask, torch.tensor([6]), [[[7, 9]]], beam=3, alpha=0.6)[0][0]
    with torch.no_grad():
        lp = sequence_logprob(model, src, mask, hyp.tokens)
    assert hyp.logprob == pytest.approx(lp, abs=1e-4)
    assert hyp.score == pytest.approx(lp / length_penalty(float(len(hyp.tokens) + 1), 0.6, "gnmt"), abs=1e-4)


def test_constraints_after_a_prefix():
    model = tiny_model(vocab=12, seed=4)
    src, mask = batch(SOURCES[:2])
    forced, max_len = with_prefixes(model, [[5, 5], []], torch.tensor([3, 3]), torch.device("cpu"))
    max_len = torch.maximum(max_len, torch.tensor([2 + 3 + 1, 3 + 1]))  # as the translator raises it
    hyps = constrained_beam_search(forced, src, mask, max_len, [[[6, 7, 8]], [[9, 4, 9]]], beam=3)
    assert hyps[0][0].tokens[:2] == [5, 5] and contains(hyps[0][0].tokens, [6, 7, 8])
    assert contains(hyps[1][0].tokens, [9, 4, 9])


def test_encoding_names_the_line_of_a_bad_constraint():
    from rnmt.errors import UserError

    def encode(text):
        return [1] if text == "?" else [4] * len(text.split())

    assert encode_constraints([["a b"], []], 2, encode, unk_id=1) == [[[4, 4]], []]
    with pytest.raises(UserError, match="constraint 2 of line 8 is empty"):
        encode_constraints([["a", " "]], 1, encode, unk_id=1, first_line=7)
    with pytest.raises(UserError, match="constraint 1 of line 1 .* does not know"):
        encode_constraints([["?"]], 1, encode, unk_id=1)


@pytest.mark.parametrize("arch", ["seq2seq", "atr-rnnsearch", "cseq2seq1", "cseq2seq2", "dtmt", "transformer"])
def test_every_model_family_through_the_model_interface(arch):
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    options = dict(attention_heads=2) if arch in ("dtmt", "transformer") else {}
    if arch == "dtmt":
        options.update(cell="lgru", options={"enc_depth": 2, "query_depth": 2, "dec_depth": 2})
    torch.manual_seed(3)
    model = build_model(ModelConfig(arch=arch, emb_size=8, hidden_size=8, src_vocab_size=9, tgt_vocab_size=12,
                                    **options))
    for p in model.parameters():
        torch.nn.init.uniform_(p, -1.0, 1.0)
    model.eval()
    src, mask = batch(SOURCES)
    max_len = torch.tensor([6, 4, 7, 3])
    constraints = [[[4, 5]], [], [[6], [6, 7, 6]], []]
    ours = constrained_beam_search(model, src, mask, max_len, constraints, beam=3, nbest=2)
    plain = beam_search(model, src, mask, max_len, beam=3, nbest=2)
    for b, phrases in enumerate(constraints):
        assert all(contains(h.tokens, p) for h in ours[b] for p in phrases)
        if not phrases:
            assert [h.tokens for h in ours[b]] == [h.tokens for h in plain[b]]


def test_beam_slots_are_shared_among_banks_and_spare_ones_passed_on():
    from rnmt.search.constraints import _Candidate, _finish_and_allocate

    sc = SentenceConstraints([Phrase([4, 5, 6])])  # banks 0..3
    eos = 3
    cands = [_Candidate(-1.0 - i / 10, i, 7, (0,)) for i in range(6)]  # six in bank 0, the most probable
    cands += [_Candidate(-5.0, 0, 4, (1,)), _Candidate(-9.0, 1, 6, (3,)), _Candidate(-8.0, 1, eos, (3,))]
    ended, alive = _finish_and_allocate(cands, sc, 4, eos)
    assert [c.score for c in ended] == [-8.0]  # an end of sentence in the top bank, with every phrase met
    # one slot per bank; bank 2 is empty, so its slot goes to the highest bank with candidates left
    assert sorted(sum(c.state) for c in alive) == [0, 0, 1, 3]


def test_attention_rows_follow_the_constrained_output():
    model = tiny_model(vocab=12, seed=6)
    src, mask = batch(SOURCES[:2])
    hyps = constrained_beam_search(model, src, mask, torch.tensor([6, 5]), [[[6, 7]], [[9]]], beam=3,
                                   return_attention=True)
    for nbest in hyps:
        h = nbest[0]
        assert h.attention.shape == (len(h.tokens) + 1, src.size(1))
        assert torch.allclose(h.attention.sum(-1), torch.ones(len(h.tokens) + 1), atol=1e-5)
