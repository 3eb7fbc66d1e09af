"""Token-budget batching with length bucketing, seeded shuffling and exact resume.

Each epoch's batches are a pure function of (lengths, options, seed, epoch):

1. shuffle the pair indices with a generator seeded by ``(seed, epoch)``;
2. cut the permutation into chunks of `chunk_size` pairs and sort each chunk by
   (source length, target length), so a batch holds pairs of similar length while the
   random tie order still varies batch composition between epochs;
3. pack each sorted chunk greedily: a pair joins the current batch while
   ``B * (max src len + max tgt len) <= max_tokens`` (the padded size of src plus tgt_in);
   a single pair over budget forms its own batch rather than being dropped;
4. shuffle the order of the batches with the same generator.

An epoch may also be given by a ``plan`` (`rnmt.data.corpora`): a function of the epoch
that returns the pairs it contains (with repeats; None: every pair once) and the lengths
they have in that epoch. The steps above then run on those pairs and lengths.

Without `shuffle`, the whole corpus is sorted by length once and batches come in that
order (for validation). Sharding deals batch k to rank ``k % world_size``; the list is first
padded by repeating its first batches so every rank gets the same number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from rnmt.errors import UserError


def pack_sorted(order: Sequence[int], src_lens: Sequence[int], tgt_lens: Sequence[int],
                max_tokens: int, max_sentences: Optional[int] = None) -> List[List[int]]:
    """Greedily cut `order` (already sorted by length) into batches within the budget."""
    batches: List[List[int]] = []
    cur: List[int] = []
    max_src = max_tgt = 0
    for i in order:
        s, t = src_lens[i], tgt_lens[i]
        new_src, new_tgt = max(max_src, s), max(max_tgt, t)
        size = len(cur) + 1
        if cur and ((new_src + new_tgt) * size > max_tokens or (max_sentences and size > max_sentences)):
            batches.append(cur)
            cur, max_src, max_tgt = [i], s, t
        else:
            cur.append(i)
            max_src, max_tgt = new_src, new_tgt
    if cur:
        batches.append(cur)
    return batches


class BatchList(Sequence):
    """An epoch's batches kept as two numpy arrays instead of Python lists.

    `order` holds every pair index in batch order and batch k is
    ``order[bounds[k]:bounds[k + 1]]``, so an epoch costs a few bytes per pair however large
    the corpus is. Indexing or iterating gives plain lists of ints (the sampler's API).
    """

    def __init__(self, order: np.ndarray, bounds: np.ndarray) -> None:
        self.order, self.bounds = order, bounds

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if not -len(self) <= k < len(self):
            raise IndexError(f"batch {k} out of range for {len(self)} batches")
        k %= len(self)
        return self.order[self.bounds[k]:self.bounds[k + 1]].tolist()

    def __iter__(self) -> Iterator[List[int]]:
        for k in range(len(self)):
            yield self.order[self.bounds[k]:self.bounds[k + 1]].tolist()

    def __eq__(self, other) -> bool:
        if isinstance(other, BatchList):
            return np.array_equal(self.bounds, other.bounds) and np.array_equal(self.order, other.order)
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(list(a) == b for a, b in zip(other, self))
        return NotImplemented


def _index_dtype(n: int) -> type:
    return np.int32 if n < 2 ** 31 else np.int64


def _lengths(values: Sequence[int] | np.ndarray) -> np.ndarray:
    """Lengths as a compact integer array (no copy when they already are int32)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)
    if arr.dtype != np.int32 and (len(arr) == 0 or int(arr.max()) < 2 ** 31):
        arr = arr.astype(np.int32)
    return arr


_PACK_SLICE = 1 << 16  # pairs converted to Python ints at a time while packing


def _pack_bounds(order: np.ndarray, src_lens: np.ndarray, tgt_lens: np.ndarray, max_tokens: int,
                 max_sentences: Optional[int]) -> np.ndarray:
    """`pack_sorted` as batch end positions within `order`, in bounded memory."""
    ends: List[int] = []
    size = max_src = max_tgt = 0
    pos = 0
    for lo in range(0, len(order), _PACK_SLICE):
        part = order[lo:lo + _PACK_SLICE]
        for s, t in zip(src_lens[part].tolist(), tgt_lens[part].tolist()):
            new_src, new_tgt = max(max_src, s), max(max_tgt, t)
            if size and ((new_src + new_tgt) * (size + 1) > max_tokens
                         or (max_sentences and size + 1 > max_sentences)):
                ends.append(pos)
                size, max_src, max_tgt = 1, s, t
            else:
                size += 1
                max_src, max_tgt = new_src, new_tgt
            pos += 1
    if size:
        ends.append(pos)
    return np.asarray(ends, dtype=np.int64)


# epoch -> (its pairs with repeats, or None for every pair once; source lengths; target lengths)
EpochPlan = Callable[[int], Tuple[Optional[np.ndarray], np.ndarray, np.ndarray]]


class TokenBatchSampler:
    """Batches of pair indices whose padded size stays within `max_tokens`.

    Use it either functionally, ``batches(epoch, rank, world_size, start)``, or as a
    resumable iterator: ``for indices in sampler`` yields the remaining batches of the
    current epoch (`epoch`, `position`) and moves to the next epoch once exhausted. A
    batch counts as consumed as soon as it is yielded, so `state_dict()` taken inside the
    loop body (after the step on that batch) resumes at the following batch.

    Memory: the lengths are kept as int32 arrays and an epoch as one index array plus batch
    boundaries (`BatchList`), so the sampler needs about 16 bytes per pair and never
    holds the corpus as Python objects.
    """

    def __init__(self, src_lens: Sequence[int] | np.ndarray, tgt_lens: Sequence[int] | np.ndarray,
                 max_tokens: int = 4096,
                 shuffle: bool = True, seed: int = 1, max_sentences: Optional[int] = None,
                 chunk_size: int = 10000, rank: int = 0, world_size: int = 1,
                 plan: Optional[EpochPlan] = None) -> None:
        if len(src_lens) != len(tgt_lens):
            raise ValueError(f"{len(src_lens)} source lengths but {len(tgt_lens)} target lengths")
        if max_tokens <= 0:
            raise UserError(f"max_tokens must be positive, got {max_tokens}")
        if max_sentences is not None and max_sentences <= 0:
            raise UserError(f"max_sentences must be positive, got {max_sentences}")
        _check_rank(rank, world_size)
        self.src_lens = _lengths(src_lens)
        self.tgt_lens = _lengths(tgt_lens)
        self.max_tokens = int(max_tokens)
        self.shuffle = shuffle
        self.seed = int(seed)
        self.max_sentences = max_sentences
        self.chunk_size = max(1, int(chunk_size))
        self.rank, self.world_size = rank, world_size
        self.plan = plan
        self.epoch = 0
        self.position = 0  # batches of this rank already handed out in `epoch`
        self._cached_epoch: Optional[int] = None
        self._cached: Optional[BatchList] = None

    # -- pure functions of the epoch -------------------------------------------------
    def epoch_batches(self, epoch: int) -> BatchList:
        """All batches of `epoch` in order, before sharding (the last epoch is cached)."""
        cached = self._cached
        if self._cached_epoch != epoch or cached is None:
            self._cached = None  # free the previous epoch before building the next
            cached = self._cached = self._build(epoch)
            self._cached_epoch = epoch
        return cached

    def _build(self, epoch: int) -> BatchList:
        n = len(self.src_lens)
        dtype = _index_dtype(n)
        if not self.shuffle:
            order: np.ndarray = np.lexsort((self.tgt_lens, self.src_lens)).astype(dtype)
            bounds = np.concatenate([[0], _pack_bounds(order, self.src_lens, self.tgt_lens,
                                                       self.max_tokens, self.max_sentences)])
            return BatchList(order, bounds.astype(np.int64))
        src_lens, tgt_lens = self.src_lens, self.tgt_lens
        pairs = None
        if self.plan is not None:
            pairs, plan_src, plan_tgt = self.plan(epoch)
            src_lens, tgt_lens = _lengths(plan_src), _lengths(plan_tgt)
            if pairs is not None:
                n = len(pairs)
                dtype = _index_dtype(max(len(src_lens), n))
        rng = np.random.default_rng([self.seed, epoch])
        # rng.permutation(n), drawn in place in the index dtype (same numbers, half the memory).
        perm: np.ndarray = np.arange(n, dtype=dtype) if pairs is None else np.array(pairs, dtype=dtype)
        rng.shuffle(perm)
        ends = [np.zeros(1, dtype=np.int64)]
        for start in range(0, n, self.chunk_size):
            chunk = perm[start:start + self.chunk_size]
            # lexsort is stable: equal lengths keep their random order. Sorting in place:
            # the permutation becomes the (unshuffled) batch order.
            chunk[:] = chunk[np.lexsort((tgt_lens[chunk], src_lens[chunk]))]
            ends.append(start + _pack_bounds(chunk, src_lens, tgt_lens, self.max_tokens, self.max_sentences))
        bounds = np.concatenate(ends)
        # Shuffle the batch order: copy each batch's slice to its new place.
        batch_perm = rng.permutation(len(bounds) - 1)
        sizes = np.diff(bounds)[batch_perm]
        new_bounds = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_bounds[1:])
        order = np.empty(n, dtype=dtype)
        for dst, src, size in zip(new_bounds[:-1].tolist(), bounds[:-1][batch_perm].tolist(), sizes.tolist()):
            order[dst:dst + size] = perm[src:src + size]
        return BatchList(order, new_bounds)

    def num_batches(self, epoch: int, world_size: int = 1) -> int:
        """Batches each rank gets in `epoch` (equal for every rank)."""
        return -(-len(self.epoch_batches(epoch)) // world_size)

    def batches(self, epoch: int, rank: int = 0, world_size: int = 1, start: int = 0) -> Iterator[List[int]]:
        """Yield rank `rank`'s batches of `epoch`, skipping its first `start` batches."""
        _check_rank(rank, world_size)
        full = self.epoch_batches(epoch)
        per_rank = self.num_batches(epoch, world_size)
        for k in range(start, per_rank):
            j = k * world_size + rank
            # Padding wraps around to the epoch's first batches.
            yield full[j % len(full)]

    # -- resumable iteration ---------------------------------------------------------
    def __len__(self) -> int:
        return self.num_batches(self.epoch, self.world_size)

    def __iter__(self) -> Iterator[List[int]]:
        epoch = self.epoch
        for indices in self.batches(epoch, self.rank, self.world_size, start=self.position):
            self.position += 1
            yield indices
        self.epoch, self.position = epoch + 1, 0

    def forever(self) -> Iterator[List[int]]:
        """This epoch's batches, then every later epoch's, without end (for timing updates):
        iteration itself moves to the next epoch when one ends."""
        while True:
            drawn = False
            for indices in self:
                drawn = True
                yield indices
            if not drawn:
                raise UserError(f"epoch {self.epoch - 1} has no batch: no training pair was drawn")

    def set_epoch(self, epoch: int) -> None:
        """Start iteration at the beginning of `epoch`."""
        self.epoch, self.position = int(epoch), 0

    def state_dict(self) -> Dict[str, Any]:
        """Where iteration stands, plus what must match for it to mean the same batches."""
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed,
                "max_tokens": self.max_tokens, "max_sentences": self.max_sentences,
                "shuffle": self.shuffle, "chunk_size": self.chunk_size,
                "world_size": self.world_size, "num_pairs": len(self.src_lens)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue where `state_dict()` was taken (same data and options).

        The number of processes may differ: `position` counts this rank's batches, so it is
        converted through the global count of batches consumed, ``position * old_world``,
        rounded up to a whole number of new positions (at most ``world_size - 1`` batches of
        the epoch are skipped, none is repeated). With the same world size it is exact.
        """
        for key in ("seed", "max_tokens", "max_sentences", "shuffle", "chunk_size"):
            if key in state and state[key] != getattr(self, key):
                raise UserError(f"cannot resume the batch order: checkpoint has {key}={state[key]}, "
                                f"the current run has {key}={getattr(self, key)}")
        if "num_pairs" in state and state["num_pairs"] != len(self.src_lens):
            raise UserError(f"cannot resume the batch order: checkpoint was taken on {state['num_pairs']} "
                            f"training pairs, this corpus has {len(self.src_lens)}")
        epoch, position = int(state["epoch"]), int(state["position"])
        old_world = int(state.get("world_size", self.world_size))
        if old_world != self.world_size:
            consumed = position * old_world
            position = -(-consumed // self.world_size)
            if position >= self.num_batches(epoch, self.world_size):
                epoch, position = epoch + 1, 0
        self.epoch, self.position = epoch, position


def _check_rank(rank: int, world_size: int) -> None:
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in a world of size {world_size}")
