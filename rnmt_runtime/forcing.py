"""Outputs that start with a given prefix, outputs no shorter than a minimum, and outputs
without a repeated n-gram: the model wrapped so that every search honours them (rnmt's
`rnmt.search.prefix`, `rnmt.search.min_length` and `rnmt.search.repeats`, in numpy).

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
HISTORY = "no_repeat.history"  # state: [R, L] BOS and the words so far; pad after them
POSITION = "no_repeat.position"  # state: [R] where the previous word goes in HISTORY
ROWS = "no_repeat.rows"  # memory: [B] zeros, for the batch's size


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


def blocked_words(history: np.ndarray, position: np.ndarray, n: int, vocab_size: int) -> np.ndarray:
    """``[R, V]`` True where word w after row r's output would repeat an n-gram of it
    (``history[r, :position[r] + 1]`` is the output so far, BOS first): some earlier window
    ``history[r, j : j + n]`` inside the output has the output's last n - 1 words as its first
    n - 1 and w as its last."""
    R, L = history.shape
    if L < n:
        return np.zeros((R, vocab_size), dtype=bool)
    windows = np.lib.stride_tricks.sliding_window_view(history, n, axis=1)  # [R, L - n + 1, n]
    inside = np.arange(L - n + 1)[None, :] + (n - 1) <= position[:, None]  # the whole window is output
    if n > 1:
        last = np.take_along_axis(history, np.clip(position[:, None] + np.arange(2 - n, 1), 0, None), axis=1)
        inside &= (windows[..., :-1] == last[:, None, :]).all(-1)
        inside &= position[:, None] >= n - 2  # the output has n - 1 words to match
    # Each matching window marks its last word; the others mark a spare column, dropped after.
    words = np.where(inside, windows[..., -1], vocab_size)
    marks = np.zeros((R, vocab_size + 1), dtype=bool)
    np.put_along_axis(marks, words, True, axis=1)
    return marks[:, :vocab_size]


class RepeatsBlocked(_Wrapper):
    """No output contains the same ``n`` subwords twice. A row whose every allowed word would
    be blocked is left alone (its only word may be forced: a prefix, or the end at the length
    limit), so blocking never ends a hypothesis."""

    def __init__(self, model: Any, n: int, max_len: int) -> None:
        super().__init__(model)
        self.n, self.width = n, max_len + 1  # BOS and up to max_len words

    def encode(self, src: np.ndarray, src_mask: np.ndarray) -> Arrays:
        return {**self.inner.encode(src, src_mask), ROWS: np.zeros(src.shape[0], dtype=np.int64)}

    def init_state(self, memory: Arrays) -> Arrays:
        rows = memory[ROWS].shape[0]
        return {**self.inner.init_state(_without(memory, ROWS)),
                HISTORY: np.full((rows, self.width), self.pad_id, dtype=np.int64),
                POSITION: np.zeros(rows, dtype=np.int64)}

    def step(self, prev: np.ndarray, state: Arrays, memory: Arrays) -> Tuple[np.ndarray, Arrays, Arrays]:
        inner_state = {k: v for k, v in state.items() if k not in (HISTORY, POSITION)}
        log_probs, new_state, extras = self.inner.step(prev, inner_state, _without(memory, ROWS))
        position = np.minimum(state[POSITION], self.width - 1)
        history = state[HISTORY].copy()
        history[np.arange(prev.shape[0]), position] = prev
        blocked = blocked_words(history, position, self.n, log_probs.shape[1])
        blocked &= (np.isfinite(log_probs) & ~blocked).any(1, keepdims=True)  # never a row's last way on
        log_probs[blocked] = NEG_INF
        return log_probs, {**new_state, HISTORY: history, POSITION: position + 1}, extras


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


def with_repeats_blocked(model: Any, n: int, max_len: np.ndarray) -> Any:
    """The model to search with: ``model`` itself when ``n`` is 0 (blocking off)."""
    return model if n <= 0 else RepeatsBlocked(model, n, int(max_len.max()))
