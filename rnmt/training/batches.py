"""The batches of each update, drawn from the run's sampler with where they came from.

`UpdateBatches` draws ``train.accumulate`` batches per update from the run's
`TokenBatchSampler`, crossing into the next epoch when one ends and stopping at
``train.max_epochs``. Each `TrainBatch` carries its epoch (the pairs and segmentation
`TrainingData.view` collates it from, which differ between epochs under weighted corpora or
subword sampling) and its position in that epoch, so the update that trains on it reads
nothing of the drawing's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional

from rnmt.data import TokenBatchSampler
from rnmt.errors import UserError

# Epochs in a row without a batch (corpus weights so small that no pair was drawn) before
# the run stops: a bound, so such a config ends with an error instead of spinning.
MAX_EMPTY_EPOCHS = 100


@dataclass(frozen=True)
class TrainBatch:
    """One batch's pair indices, the epoch it belongs to, and its position in that epoch
    (this rank's batches of the epoch drawn so far, itself included)."""

    indices: List[int]
    epoch: int
    position: int


class UpdateBatches:
    """The batches of one update after another, resuming where the sampler stands."""

    def __init__(self, sampler: TokenBatchSampler, accumulate: int, max_epochs: Optional[int]) -> None:
        self.sampler, self.accumulate, self.max_epochs = sampler, accumulate, max_epochs
        self._source: Iterator[List[int]] = iter(sampler)

    def next_update(self) -> List[TrainBatch]:
        """The next update's batches: ``accumulate`` of them, fewer (or none) only when
        ``train.max_epochs`` ends the data."""
        out: List[TrainBatch] = []
        empty = 0
        while len(out) < self.accumulate:
            try:
                indices = next(self._source)
            except StopIteration:
                if self.max_epochs and self.sampler.epoch >= self.max_epochs:
                    break
                empty += 1
                if empty > MAX_EMPTY_EPOCHS:
                    raise UserError(f"data.train: no training pair drawn in {empty} epochs in a row "
                                    f"(epoch {self.sampler.epoch}); raise the corpora's weights") from None
                self._source = iter(self.sampler)
                continue
            # The sampler moves to the next epoch only after the epoch's last batch: these
            # are the drawn batch's own epoch and position.
            out.append(TrainBatch(indices, self.sampler.epoch, self.sampler.position))
            empty = 0
        return out
