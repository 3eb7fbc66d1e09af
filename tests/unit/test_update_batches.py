"""Each update's batches carry the epoch and position they were drawn at (rnmt/training/batches.py)."""

from __future__ import annotations

import pytest

from rnmt.data import TokenBatchSampler
from rnmt.errors import UserError
from rnmt.training.batches import UpdateBatches


def _sampler(pairs: int = 10, max_tokens: int = 8) -> TokenBatchSampler:
    return TokenBatchSampler([3] * pairs, [3] * pairs, max_tokens=max_tokens, seed=7)


def test_an_update_crossing_an_epoch_end_labels_each_batch_with_its_own_epoch():
    sampler = _sampler()
    per_epoch = len(sampler)
    assert per_epoch > 3
    updates = UpdateBatches(sampler, accumulate=3, max_epochs=None)
    drawn = [b for _ in range(4) for b in updates.next_update()]  # 12 batches, crossing epoch ends
    assert [b.epoch for b in drawn] == [k // per_epoch for k in range(12)]
    assert [b.position for b in drawn] == [k % per_epoch + 1 for k in range(12)]
    # the same batches as the sampler's own order of each epoch
    expected = [list(x) for e in range(3) for x in _sampler().epoch_batches(e)][:12]
    assert [list(b.indices) for b in drawn] == expected


def test_max_epochs_ends_the_data_with_a_short_then_empty_update():
    sampler = _sampler()
    per_epoch = len(sampler)
    updates = UpdateBatches(sampler, accumulate=3, max_epochs=1)
    sizes = [len(updates.next_update()) for _ in range(per_epoch // 3 + 2)]
    full, rest = divmod(per_epoch, 3)
    assert sizes == [3] * full + ([rest] if rest else []) + [0] * (2 - bool(rest))


def test_an_epoch_without_batches_forever_is_one_error():
    sampler = TokenBatchSampler([3] * 4, [3] * 4, max_tokens=8, seed=1, plan=lambda epoch: ([], [3] * 4, [3] * 4))
    with pytest.raises(UserError, match="no training pair drawn in 101 epochs"):
        UpdateBatches(sampler, accumulate=1, max_epochs=None).next_update()
