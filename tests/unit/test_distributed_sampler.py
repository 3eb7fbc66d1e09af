"""Sampler pieces of data-parallel training: resuming with another number of processes and
the compact epoch representation."""

import numpy as np
import pytest

from rnmt.data import TokenBatchSampler
from rnmt.data.sampler import BatchList

N = 400


def make(rank=0, world_size=1):
    rng = np.random.default_rng(1)
    return TokenBatchSampler(rng.integers(2, 50, N), rng.integers(2, 50, N), max_tokens=500, seed=5,
                             chunk_size=100, rank=rank, world_size=world_size)


def global_order(epoch):
    return list(make().batches(epoch))


@pytest.mark.parametrize("old,new", [(2, 1), (1, 2), (2, 3), (3, 2)])
def test_resume_with_another_world_size_continues_the_global_order(old, new):
    consumed = 3  # per old rank
    state = make(0, old).state_dict()
    state["position"] = consumed
    resumed = [make(r, new) for r in range(new)]
    for s in resumed:
        s.load_state_dict(state)
    start = -(-consumed * old // new)  # rounded up: nothing repeats, at most new - 1 batches skipped
    assert all(s.position == start for s in resumed)
    full = global_order(0)
    next_batches = [next(iter(s)) for s in resumed]
    assert next_batches == [full[(start * new + r) % len(full)] for r in range(new)]
    assert start * new >= consumed * old and start * new - consumed * old < new


def test_resume_past_the_last_batch_moves_to_the_next_epoch():
    s = make(0, 2)
    state = s.state_dict()
    state["position"] = s.num_batches(0, 2)  # the epoch was finished but not yet rolled over
    one = make()
    one.load_state_dict(state)
    assert (one.epoch, one.position) == (1, 0)


def test_epochs_are_numpy_arrays_not_lists():
    s = make()
    batches = s.epoch_batches(0)
    assert isinstance(batches, BatchList)
    assert batches.order.dtype == np.int32 and batches.order.nbytes == 4 * N
    assert batches == [list(b) for b in batches] and batches[-1] == list(batches)[-1]
    assert sorted(int(i) for b in batches for i in b) == list(range(N))
