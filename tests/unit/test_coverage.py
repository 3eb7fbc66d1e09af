"""GNMT's coverage penalty: the formula, its place in every finished hypothesis's score in
beam search and constrained beam search (batched, padded and compacted), the exhaustive
optimum it changes, and the models it cannot apply to."""

import itertools
import math

import pytest
import torch

from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models import build_model
from rnmt.search import beam_search, length_penalty
from rnmt.search.constraints import constrained_beam_search
from rnmt.search.coverage import FLOOR, Coverage
from tests.unit.test_search import sequence_logprob, tiny_model


def gnmt_cp(attention, n_source, beta):
    """beta * sum_i log(min(sum_j p_ij, 1)) over the first n_source positions, by hand."""
    totals = attention.sum(0)[:n_source]
    return beta * sum(math.log(max(min(float(x), 1.0), FLOOR)) for x in totals)


def test_penalty_is_the_formula_over_real_source_positions():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.bool)  # two sentences, K = 2
    cover = Coverage(0.5, mask, K=2)
    steps = [torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.9, 0.1, 0.0, 0.0], [0.6, 0.4, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]),
             torch.tensor([[0.7, 0.2, 0.1, 0.0], [0.8, 0.2, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])]
    cover.add_step({"attention": steps[0]})
    cover.advance(torch.tensor([1, 1, 2, 3]))  # row 0 dropped, row 1 kept twice
    cover.add_step({"attention": steps[1]})
    got = cover.penalty(torch.tensor([0, 1, 2, 3])).tolist()
    totals = [steps[0][1] + steps[1][0], steps[0][1] + steps[1][1], steps[0][2] + steps[1][2],
              steps[0][3] + steps[1][3]]
    n_source = [3, 3, 2, 2]
    want = [gnmt_cp(t.unsqueeze(0), n, 0.5) for t, n in zip(totals, n_source)]
    assert got == pytest.approx(want, abs=1e-6)
    assert want[3] == pytest.approx(0.5 * math.log(FLOOR))  # word 0 never attended: the floor, not -inf
    assert Coverage.of(0.0, mask, 2) is None  # off: nothing is tracked


@pytest.mark.parametrize("search", ["beam", "constrained"])
def test_every_finished_hypothesis_scores_logp_over_lp_plus_its_coverage(search, monkeypatch):
    # sentences of different lengths finish at different steps: the batch is compacted under way
    compactions = []
    compact = Coverage.compact
    monkeypatch.setattr(Coverage, "compact", lambda self, *a: compactions.append(1) or compact(self, *a))
    model = tiny_model(vocab=12, seed=11)
    sentences = [[5, 6, 7, 8, 3], [4, 5, 3], [8, 3], [6, 6, 7, 3], [5, 3]]
    src = torch.zeros(len(sentences), 5, dtype=torch.long)
    for i, s in enumerate(sentences):
        src[i, : len(s)] = torch.tensor(s)
    mask, max_len, beta, alpha = src != 0, torch.tensor([9, 4, 6, 8, 3]), 0.4, 0.6
    kwargs = dict(beam=3, nbest=3, alpha=alpha, return_attention=True, coverage=beta)
    if search == "beam":
        results = beam_search(model, src, mask, max_len, **kwargs)
    else:
        results = constrained_beam_search(model, src, mask, max_len, [[[7]], [], [[4, 5]], [], []], **kwargs)
    for s, hyps in zip(sentences, results):
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for h in hyps:
            lp = length_penalty(float(len(h.tokens) + 1), alpha, "gnmt")
            assert h.score == pytest.approx(h.logprob / lp + gnmt_cp(h.attention, len(s), beta), abs=1e-4)
            with torch.no_grad():
                alone = sequence_logprob(model, torch.tensor([s]), torch.ones(1, len(s), dtype=torch.bool), h.tokens)
            assert h.logprob == pytest.approx(alone, abs=1e-4)
    assert compactions


def test_a_wide_beam_returns_the_exhaustive_optimum_of_the_penalised_score():
    model = tiny_model(vocab=6, seed=4)
    src = torch.tensor([[5, 6, 7, 8, 3]])
    mask = src != 0
    words, max_len, beta = [1, 4, 5], 4, 1.0

    def score(seq):
        with torch.no_grad():
            memory, steps = model.encode(src, mask), []
            state, prev = model.init_state(memory), torch.tensor([model.bos_id])
            for tok in list(seq) + [model.eos_id]:
                _, state, extras = model.step(prev, state, memory)
                steps.append(extras["attention"][0])
                prev = torch.tensor([tok])
            logp = sequence_logprob(model, src, mask, seq) / length_penalty(float(len(seq) + 1), 0.6, "gnmt")
        return logp + gnmt_cp(torch.stack(steps), 5, beta), logp

    candidates = [seq for n in range(max_len) for seq in itertools.product(words, repeat=n)]
    best = max(candidates, key=lambda seq: score(seq)[0])
    plain = max(candidates, key=lambda seq: score(seq)[1])
    assert best != plain  # the penalty changes the winner here: the test can tell it is applied
    hyp = beam_search(model, src, mask, torch.tensor([max_len]), beam=64, alpha=0.6, coverage=beta)[0][0]
    assert hyp.tokens == list(best) and hyp.score == pytest.approx(score(best)[0], abs=1e-4)
    off = beam_search(model, src, mask, torch.tensor([max_len]), beam=64, alpha=0.6)[0][0]
    assert off.tokens == list(plain)


def test_a_model_without_attention_is_refused():
    torch.manual_seed(0)
    model = build_model(ModelConfig(arch="seq2seq", emb_size=8, hidden_size=8, src_vocab_size=9,
                                    tgt_vocab_size=6)).eval()
    src = torch.tensor([[5, 6, 3]])
    with pytest.raises(UserError, match="coverage penalty needs attention weights"):
        beam_search(model, src, src != 0, torch.tensor([4]), beam=2, coverage=0.2)
    beam_search(model, src, src != 0, torch.tensor([4]), beam=2)  # off: no attention needed


@pytest.mark.parametrize("arch", ["atr-rnnsearch", "cseq2seq1", "cseq2seq2", "deep-rnnsearch", "dtmt", "luong",
                                  "rnnsearch", "rnnsearch-minus", "seq2seq", "seq2seq-sutskever", "transformer"])
def test_which_models_report_attention(arch):
    from rnmt.models import architectures
    from rnmt.models.base import reports_attention

    assert arch in architectures()
    torch.manual_seed(0)
    options = {"attention": "general"} if arch == "luong" else {}
    model = build_model(ModelConfig(arch=arch, emb_size=8, hidden_size=8, src_vocab_size=9, tgt_vocab_size=6,
                                    options=options))
    model.train()
    without = arch.startswith(("seq2seq", "cseq2seq"))  # a fixed summary, or a re-reading RNN instead
    assert reports_attention(model) is not without
    assert model.training  # asked in eval mode, left as it was
