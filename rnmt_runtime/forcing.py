"""Outputs that start with a given prefix, and outputs no shorter than a minimum: the
model wrapped so that every search honours them (rnmt's `rnmt.search.prefix` and
`rnmt.search.min_length`, in numpy).

What a wrapper needs per sentence travels in the memory dict and what it needs per row in
the state dict, which every search already repeats, reorders and compacts. The step keeps
the model's own log-probability of a forced word, so scores stay log p(output | source).
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np

from rnmt_runtime.search import NEG_INF, Arrays

PREFIX_TOKENS = "prefix.tokens"  # memory: [B, P] prefix subwords, -1 after a sentence's prefix
PREFIX_POSITION = "prefix.position"  # state: [R] the next output position of each row
NEEDED = "min_length.needed"  # memory: [B] subwords an output needs before its end
LENGTH = "min_length.length"  # state: [R] subwords output so far


def _without(tree: Arrays, key: str) -> Arrays:
    return {k: v for k, v in tree.items() if k != key}


class _Wrapper:
    def __init__(self, model: Any) -> None:
        self.inner = model
        self.pad_id, self.bos_id, self.eos_id = model.pad_id, model.bos_id, model.eos_id
        self.beam_shares_memory = model.beam_shares_memory


class PrefixForced(_Wrapper):
    """Until a row has output its sentence's prefix, only the prefix's next subword is allowed."""

    def __init__(self, model: Any, prefixes: Sequence[Sequence[int]]) -> None:
        super().__init__(model)
        width = max((len(p) for p in prefixes), default=0)
        self.tokens = np.full((len(prefixes), max(width, 1)), -1, dtype=np.int64)
        for b, ids in enumerate(prefixes):
            self.tokens[b, :len(ids)] = ids

    def encode(self, src: np.ndarray, src_mask: np.ndarray) -> Arrays:
        return {**self.inner.encode(src, src_mask), PREFIX_TOKENS: self.tokens}

    def init_state(self, memory: Arrays) -> Arrays:
        rows = memory[PREFIX_TOKENS].shape[0]
        return {**self.inner.init_state(_without(memory, PREFIX_TOKENS)),
                PREFIX_POSITION: np.zeros(rows, dtype=np.int64)}

    def step(self, prev: np.ndarray, state: Arrays, memory: Arrays) -> Tuple[np.ndarray, Arrays, Arrays]:
        log_probs, new_state, extras = self.inner.step(prev, _without(state, PREFIX_POSITION),
                                                       _without(memory, PREFIX_TOKENS))
        tokens, position = memory[PREFIX_TOKENS], state[PREFIX_POSITION]
        group = position.shape[0] // tokens.shape[0]  # rows per memory row: K with a shared memory
        sent = np.arange(position.shape[0]) // group
        forced = tokens[sent, np.minimum(position, tokens.shape[1] - 1)]
        forced = np.where(position >= tokens.shape[1], -1, forced)
        active = np.nonzero(forced >= 0)[0]
        if active.size:
            words = forced[active]
            keep = log_probs[active, words]
            log_probs[active] = NEG_INF
            log_probs[active, words] = keep
        return log_probs, {**new_state, PREFIX_POSITION: position + 1}, extras


class MinLength(_Wrapper):
    """No output of sentence b ends before ``needed[b]`` subwords."""

    def __init__(self, model: Any, needed: np.ndarray) -> None:
        super().__init__(model)
        self.needed = needed

    def encode(self, src: np.ndarray, src_mask: np.ndarray) -> Arrays:
        return {**self.inner.encode(src, src_mask), NEEDED: self.needed}

    def init_state(self, memory: Arrays) -> Arrays:
        return {**self.inner.init_state(_without(memory, NEEDED)), LENGTH: np.zeros_like(memory[NEEDED])}

    def step(self, prev: np.ndarray, state: Arrays, memory: Arrays) -> Tuple[np.ndarray, Arrays, Arrays]:
        log_probs, new_state, extras = self.inner.step(prev, _without(state, LENGTH), _without(memory, NEEDED))
        length, needed = state[LENGTH], memory[NEEDED]
        short = length < np.repeat(needed, length.shape[0] // needed.shape[0])
        log_probs[short, self.eos_id] = NEG_INF
        return log_probs, {**new_state, LENGTH: length + 1}, extras


def with_prefixes(model: Any, prefixes: List[List[int]], max_len: np.ndarray) -> Tuple[Any, np.ndarray]:
    """The model to search with and the length limits, raised so a prefix and its end fit."""
    if not any(prefixes):
        return model, max_len
    needed = np.array([len(p) + 1 for p in prefixes], dtype=np.int64)
    return PrefixForced(model, prefixes), np.maximum(max_len, needed)


def with_min_length(model: Any, n: int, max_len: np.ndarray) -> Any:
    """Sentence b's minimum is ``min(n, max_len[b] - 1)`` (``max_len`` counts the end)."""
    if n <= 0:
        return model
    return MinLength(model, np.clip(max_len - 1, 0, n).astype(np.int64))
