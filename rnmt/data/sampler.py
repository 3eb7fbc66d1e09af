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

Without `shuffle`, the whole corpus is sorted by length once and batches come in that
order (for validation). Sharding deals batch k to rank ``k % world_size``; the list is first
padded by repeating its first batches so every rank gets the same number.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence

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


class TokenBatchSampler:
    """Batches of pair indices whose padded size stays within `max_tokens`.

    Use it either functionally, ``batches(epoch, rank, world_size, start)``, or as a
    resumable iterator: ``for indices in sampler`` yields the remaining batches of the
    current epoch (`epoch`, `position`) and moves to the next epoch once exhausted. A
    batch counts as consumed as soon as it is yielded, so `state_dict()` taken inside the
    loop body (after the step on that batch) resumes at the following batch.
    """

    def __init__(self, src_lens: Sequence[int], tgt_lens: Sequence[int], max_tokens: int = 4096,
                 shuffle: bool = True, seed: int = 1, max_sentences: Optional[int] = None,
                 chunk_size: int = 10000, rank: int = 0, world_size: int = 1) -> None:
        if len(src_lens) != len(tgt_lens):
            raise ValueError(f"{len(src_lens)} source lengths but {len(tgt_lens)} target lengths")
        if max_tokens <= 0:
            raise UserError(f"max_tokens must be positive, got {max_tokens}")
        if max_sentences is not None and max_sentences <= 0:
            raise UserError(f"max_sentences must be positive, got {max_sentences}")
        _check_rank(rank, world_size)
        self.src_lens = np.asarray(src_lens, dtype=np.int64)
        self.tgt_lens = np.asarray(tgt_lens, dtype=np.int64)
        self.max_tokens = int(max_tokens)
        self.shuffle = shuffle
        self.seed = int(seed)
        self.max_sentences = max_sentences
        self.chunk_size = max(1, int(chunk_size))
        self.rank, self.world_size = rank, world_size
        self.epoch = 0
        self.position = 0  # batches of this rank already handed out in `epoch`
        self._cached_epoch: Optional[int] = None
        self._cached: List[List[int]] = []

    # -- pure functions of the epoch -------------------------------------------------
    def epoch_batches(self, epoch: int) -> List[List[int]]:
        """All batches of `epoch` in order, before sharding (the last epoch is cached)."""
        if self._cached_epoch != epoch:
            self._cached = self._build(epoch)
            self._cached_epoch = epoch
        return self._cached

    def _build(self, epoch: int) -> List[List[int]]:
        src, tgt = self.src_lens.tolist(), self.tgt_lens.tolist()
        if not self.shuffle:
            order = np.lexsort((self.tgt_lens, self.src_lens)).tolist()
            return pack_sorted(order, src, tgt, self.max_tokens, self.max_sentences)
        rng = np.random.default_rng([self.seed, epoch])
        perm = rng.permutation(len(src))
        batches: List[List[int]] = []
        for start in range(0, len(perm), self.chunk_size):
            chunk = perm[start:start + self.chunk_size]
            # lexsort is stable: equal lengths keep their random order.
            order = chunk[np.lexsort((self.tgt_lens[chunk], self.src_lens[chunk]))].tolist()
            batches.extend(pack_sorted(order, src, tgt, self.max_tokens, self.max_sentences))
        return [batches[k] for k in rng.permutation(len(batches)).tolist()]

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
            yield list(full[j % len(full)])

    # -- resumable iteration ---------------------------------------------------------
    def __len__(self) -> int:
        return self.num_batches(self.epoch, self.world_size)

    def __iter__(self) -> Iterator[List[int]]:
        epoch = self.epoch
        for indices in self.batches(epoch, self.rank, self.world_size, start=self.position):
            self.position += 1
            yield indices
        self.epoch, self.position = epoch + 1, 0

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
        """Continue exactly where `state_dict()` was taken (same data and options)."""
        for key in ("seed", "max_tokens", "max_sentences", "shuffle", "chunk_size", "world_size"):
            if key in state and state[key] != getattr(self, key):
                raise UserError(f"cannot resume the batch order: checkpoint has {key}={state[key]}, "
                                f"the current run has {key}={getattr(self, key)}")
        if "num_pairs" in state and state["num_pairs"] != len(self.src_lens):
            raise UserError(f"cannot resume the batch order: checkpoint was taken on {state['num_pairs']} "
                            f"training pairs, this corpus has {len(self.src_lens)}")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])


def _check_rank(rank: int, world_size: int) -> None:
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in a world of size {world_size}")
