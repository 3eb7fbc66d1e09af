"""Token-budget batch sampler: coverage, budget, determinism, resume, sharding."""

import numpy as np
import pytest

from rnmt.data import TokenBatchSampler
from rnmt.errors import UserError

N = 500


def lengths(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(2, 60, N), rng.integers(2, 60, N)


def sampler(**kw):
    src, tgt = lengths()
    opts = dict(max_tokens=600, shuffle=True, seed=3, chunk_size=128)
    opts.update(kw)
    return TokenBatchSampler(src, tgt, **opts)


def padded_size(s, batch):
    return len(batch) * (s.src_lens[batch].max() + s.tgt_lens[batch].max())


def test_every_pair_appears_exactly_once_per_epoch():
    s = sampler()
    for epoch in (0, 1):
        seen = sorted(i for b in s.batches(epoch) for i in b)
        assert seen == list(range(N))


def test_padded_batches_stay_within_the_token_budget():
    s = sampler()
    batches = list(s.batches(0))
    assert all(padded_size(s, b) <= 600 for b in batches)
    assert np.mean([padded_size(s, b) for b in batches]) > 300  # packing is not degenerate


def test_over_long_pair_forms_its_own_batch():
    s = TokenBatchSampler([5, 400, 6, 7], [5, 300, 6, 7], max_tokens=100, seed=1)
    batches = list(s.batches(0))
    assert [1] in batches and sorted(i for b in batches for i in b) == [0, 1, 2, 3]


def test_max_sentences_caps_batch_size():
    s = sampler(max_tokens=100000, max_sentences=16)
    assert max(len(b) for b in s.batches(0)) == 16


def test_same_seed_and_epoch_give_the_same_batches():
    assert list(sampler().batches(4)) == list(sampler().batches(4))


def test_different_epoch_or_seed_changes_the_order():
    assert list(sampler().batches(0)) != list(sampler().batches(1))
    assert list(sampler().batches(0)) != list(sampler(seed=4).batches(0))


def test_without_shuffle_batches_are_sorted_and_fixed():
    s = sampler(shuffle=False)
    assert list(s.batches(0)) == list(s.batches(1))
    firsts = [s.src_lens[b[0]] for b in s.batches(0)]
    assert firsts == sorted(firsts)


def test_iteration_advances_epochs():
    s = sampler()
    first = list(s)
    assert (s.epoch, s.position) == (1, 0)
    assert first == list(s.batches(0)) and list(s) == list(s.batches(1))


def test_resume_mid_epoch_continues_with_the_uninterrupted_batches():
    reference = sampler()
    expected = [b for _ in range(2) for b in reference]

    run = sampler()
    seen = []
    for indices in run:
        seen.append(indices)
        if len(seen) == 7:
            state = run.state_dict()  # checkpoint taken after the step on batch 7
            break
    resumed = sampler()
    resumed.load_state_dict(state)
    while resumed.epoch < 2:
        seen.extend(resumed)
    assert seen == expected


def test_resume_with_other_options_is_refused():
    state = sampler().state_dict()
    with pytest.raises(UserError, match="max_tokens"):
        sampler(max_tokens=700).load_state_dict(state)
    src, tgt = lengths()
    with pytest.raises(UserError, match="500 training pairs"):
        TokenBatchSampler(src[:-1], tgt[:-1], max_tokens=600, seed=3, chunk_size=128).load_state_dict(state)


@pytest.mark.parametrize("world_size", [2, 3])
def test_sharding_partitions_the_batches_evenly(world_size):
    s = sampler()
    full = list(s.batches(0))
    shards = [list(s.batches(0, rank=r, world_size=world_size)) for r in range(world_size)]
    assert len({len(sh) for sh in shards}) == 1
    dealt = [shards[k % world_size][k // world_size] for k in range(len(full))]
    assert dealt == full  # every batch exactly once, in round-robin order
    padding = [b for sh in shards for b in sh][len(full):]
    assert len(padding) == -len(full) % world_size


def test_sharded_iteration_resumes_per_rank():
    s = sampler(rank=1, world_size=2)
    it = iter(s)
    head = [next(it), next(it)]
    resumed = sampler(rank=1, world_size=2)
    resumed.load_state_dict(s.state_dict())
    assert head + list(resumed) == list(sampler().batches(0, rank=1, world_size=2))
def test_forever_runs_through_every_epoch_in_turn():
    s = TokenBatchSampler([3] * 10, [3] * 10, 12, shuffle=True, seed=1)
    epoch0, epoch1 = list(s.epoch_batches(0)), list(s.epoch_batches(1))
    it = s.forever()
    drawn = [next(it) for _ in range(len(epoch0) + len(epoch1) + 1)]
    assert drawn[: len(epoch0)] == epoch0 and drawn[len(epoch0): -1] == epoch1  # no epoch skipped
    assert drawn[-1] == list(s.epoch_batches(2))[0] and s.epoch == 2
