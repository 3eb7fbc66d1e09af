"""The runtime's numpy searches against rnmt's PyTorch ones on the same tiny model (wrapped
to take and give numpy arrays), so a difference is the search's alone, not the graphs':
greedy, beam with n-best and both length penalties, the coverage penalty, prefixes, a minimum
length, blocked repeats, and sampling with rnmt's counter-based draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt_runtime import forcing, sampling, search


class Numpy:
    """A PyTorch `TranslationModel` behind the runtime's numpy interface."""

    def __init__(self, model) -> None:
        self.model = model
        self.pad_id, self.bos_id, self.eos_id = model.pad_id, model.bos_id, model.eos_id
        self.beam_shares_memory = model.beam_shares_memory

    def encode(self, src, mask):
        return {k: v.numpy() for k, v in self.model.encode(torch.from_numpy(src), torch.from_numpy(mask)).items()}

    def init_state(self, memory):
        state = self.model.init_state({k: torch.from_numpy(v) for k, v in memory.items()})
        return {k: v.numpy() for k, v in state.items()}

    def step(self, prev, state, memory):
        log_probs, new_state, extras = self.model.step(torch.from_numpy(prev), {k: torch.from_numpy(v) for k, v in
                                                                               state.items()},
                                                       {k: torch.from_numpy(v) for k, v in memory.items()})
        return (log_probs.numpy().copy(), {k: v.numpy() for k, v in new_state.items()},
                {k: v.numpy() for k, v in extras.items()})


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(3)
    model = build_model(ModelConfig(emb_size=8, hidden_size=12, src_vocab_size=30, tgt_vocab_size=27)).eval()
    for p in model.parameters():
        torch.nn.init.uniform_(p, -0.6, 0.6)
    return model, Numpy(model)


def batch():
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 3], [4, 9, 3, 0, 0, 0, 0], [11, 12, 13, 3, 0, 0, 0]])
    return src, src != 0, torch.tensor([9, 4, 6])


def same(theirs, ours):
    assert len(theirs) == len(ours)
    for t, o in zip(theirs, ours):
        assert abs(t.score - o.score) < 1e-5 and abs(t.logprob - o.logprob) < 1e-5
        assert t.tokens == o.tokens or abs(t.score - o.score) < 1e-6  # an exact tie may come in either order


@torch.inference_mode()
def test_greedy_and_beam_search_equal_rnmts(models):
    from rnmt.search.beam import beam_search, greedy_search

    model, ours = models
    src, mask, max_len = batch()
    for t, o in zip(greedy_search(model, src, mask, max_len), search.greedy_search(ours, src.numpy(), mask.numpy(),
                                                                                  max_len.numpy())):
        same([t], [o])
    for normalize, alpha in (("gnmt", 0.6), ("gnmt", 1.0), ("length", 0.0), ("none", 0.0)):
        theirs = beam_search(model, src, mask, max_len, beam=4, alpha=alpha, normalize=normalize, nbest=4)
        mine = search.beam_search(ours, src.numpy(), mask.numpy(), max_len.numpy(), beam=4, alpha=alpha,
                                  normalize=normalize, nbest=4)
        for t, o in zip(theirs, mine):
            same(t, o)


@torch.inference_mode()
def test_prefixes_and_a_minimum_length_equal_rnmts(models):
    from rnmt.search.beam import beam_search
    from rnmt.search.min_length import with_min_length
    from rnmt.search.prefix import with_prefixes

    model, ours = models
    src, mask, max_len = batch()
    prefixes = [[7, 8], [], [9]]
    wrapped, limits = with_prefixes(model, prefixes, max_len, torch.device("cpu"))
    wrapped = with_min_length(wrapped, 3, limits)
    mine_model, mine_limits = forcing.with_prefixes(ours, prefixes, max_len.numpy())
    mine_model = forcing.with_min_length(mine_model, 3, mine_limits)
    assert mine_limits.tolist() == limits.tolist()
    theirs = beam_search(wrapped, src, mask, limits, beam=3, nbest=3)
    mine = search.beam_search(mine_model, src.numpy(), mask.numpy(), mine_limits, beam=3, nbest=3)
    for t, o, p in zip(theirs, mine, prefixes):
        same(t, o)
        assert all(h.tokens[:len(p)] == p and len(h.tokens) >= 3 for h in o)


@torch.inference_mode()
@pytest.mark.parametrize("beta", [0.2, 1.0])
def test_the_coverage_penalty_equals_rnmts(models, beta):
    from rnmt.search.beam import beam_search

    model, ours = models
    src, mask, max_len = batch()
    theirs = beam_search(model, src, mask, max_len, beam=4, nbest=4, coverage=beta)
    mine = search.beam_search(ours, src.numpy(), mask.numpy(), max_len.numpy(), beam=4, nbest=4, coverage=beta)
    for t, o in zip(theirs, mine):
        same(t, o)
    plain = search.beam_search(ours, src.numpy(), mask.numpy(), max_len.numpy(), beam=4, nbest=4)
    assert [[h.score for h in n] for n in plain] != [[h.score for h in n] for n in mine]  # the penalty counts


def test_blocked_words_are_rnmts():
    from rnmt.search.repeats import blocked_words

    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 4):
        history = rng.integers(0, 4, size=(6, 9))  # a small vocabulary: many repeats
        position = rng.integers(0, 9, size=6)
        theirs = blocked_words(torch.from_numpy(history), torch.from_numpy(position), n, 5).numpy()
        assert np.array_equal(forcing.blocked_words(history, position, n, 5), theirs), n


@torch.inference_mode()
@pytest.mark.parametrize("n", [1, 2, 3])
def test_blocked_repeats_equal_rnmts_in_every_search(models, n):
    from rnmt.search import sampling as theirs_sampling
    from rnmt.search.beam import beam_search, greedy_search
    from rnmt.search.prefix import with_prefixes
    from rnmt.search.repeats import with_repeats_blocked

    model, ours = models
    src, mask, max_len = batch()
    prefixes = [[7, 7], [], [9]]  # a prefix may repeat: forced words are never blocked
    wrapped, limits = with_prefixes(model, prefixes, max_len, torch.device("cpu"))
    wrapped = with_repeats_blocked(wrapped, n, limits)
    mine_model, mine_limits = forcing.with_prefixes(ours, prefixes, max_len.numpy())
    mine_model = forcing.with_repeats_blocked(mine_model, n, mine_limits)
    blocked = search.greedy_search(mine_model, src.numpy(), mask.numpy(), mine_limits)
    for t, o in zip(greedy_search(wrapped, src, mask, limits), blocked):
        same([t], [o])
    unblocked = search.greedy_search(forcing.with_prefixes(ours, prefixes, max_len.numpy())[0], src.numpy(),
                                     mask.numpy(), mine_limits)
    assert [h.tokens for h in blocked] != [h.tokens for h in unblocked]  # the blocking did something
    theirs = beam_search(wrapped, src, mask, limits, beam=4, nbest=4)
    mine = search.beam_search(mine_model, src.numpy(), mask.numpy(), mine_limits, beam=4, nbest=4)
    for t, o in zip(theirs, mine):
        same(t, o)
    drawn = theirs_sampling.sample_search(wrapped, src, mask, limits, theirs_sampling.Sampling(seed=4), [0, 1, 2], n=3)
    mine = sampling.sample_search(mine_model, src.numpy(), mask.numpy(), mine_limits, sampling.Sampling(seed=4),
                                  [0, 1, 2], n=3)
    for t, o in zip(drawn, mine):
        assert [h.tokens for h in t] == [h.tokens for h in o]


@torch.inference_mode()
def test_sampling_draws_rnmts_words(models):
    from rnmt.search import sampling as theirs

    model, ours = models
    src, mask, max_len = batch()
    streams = sampling.row_streams(7, [0, 5, 9], 2)
    assert streams.tolist() == theirs.row_streams(7, [0, 5, 9], 2, torch.device("cpu")).tolist()
    assert np.array_equal(sampling.uniforms(streams, 3), theirs.uniforms(torch.from_numpy(streams.astype(np.int64)),
                                                                         3).numpy())
    how = sampling.Sampling(topk=5, topp=0.9, temperature=0.8, seed=7)
    t = theirs.sample_search(model, src, mask, max_len, theirs.Sampling(5, 0.9, 0.8, 7), [0, 5, 9], n=2)
    o = sampling.sample_search(ours, src.numpy(), mask.numpy(), max_len.numpy(), how, [0, 5, 9], n=2)
    for a, b in zip(t, o):
        assert [h.tokens for h in a] == [h.tokens for h in b]
    how = sampling.Sampling(temperature=1.5, seed=3, epsilon=0.05)
    t = theirs.sample_search(model, src, mask, max_len, theirs.Sampling(temperature=1.5, seed=3, epsilon=0.05),
                             [0, 5, 9], n=3)
    o = sampling.sample_search(ours, src.numpy(), mask.numpy(), max_len.numpy(), how, [0, 5, 9], n=3)
    for a, b in zip(t, o):
        assert [h.tokens for h in a] == [h.tokens for h in b]


def test_the_runtimes_epsilon_cut_keeps_the_words_rnmts_keeps():
    from rnmt.search import sampling as theirs

    rows = 4000
    log_probs = np.log(np.array([[0.5, 0.3, 0.15, 0.05]] * rows, dtype=np.float32))
    u = sampling.uniforms(sampling.row_streams(4, range(rows), 1), 0)
    ours = sampling.draw(log_probs, sampling.Sampling(epsilon=0.1), u)
    t = theirs.draw(torch.from_numpy(log_probs), theirs.Sampling(epsilon=0.1), torch.from_numpy(u))
    assert set(ours.tolist()) == {0, 1, 2} and ours.tolist() == t.tolist()


def test_a_search_past_every_length_limit_is_an_error_not_a_hang(models, monkeypatch):
    """Only the forced end of sentence at the length limit ends a sentence that never
    chooses EOS: with that rule broken, the runtime's search must stop with an error."""
    _, numpy_model = models
    calls = []

    class NeverEnds(Numpy):
        def step(self, prev, state, memory):
            calls.append(1)
            assert len(calls) < 100, "the search did not stop at its length limit"
            log_probs, state, extras = numpy_model.step(prev, state, memory)
            log_probs[:, self.eos_id] = -np.inf
            return log_probs, state, extras

    monkeypatch.setattr(search, "force_eos", lambda log_probs, rows, eos_id: None)
    src, mask, _ = batch()
    with torch.no_grad(), pytest.raises(RuntimeError, match="passed the longest length limit"):
        search.beam_search(NeverEnds(numpy_model.model), src.numpy(), mask.numpy(), np.array([6, 4, 5]), beam=3)
    assert len(calls) == 6
