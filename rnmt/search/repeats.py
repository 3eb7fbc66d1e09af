"""Blocking repeated n-grams: no output contains the same n subwords twice.

A model that has not learnt when to stop reading a source phrase can loop ("his own own own
..."): the degeneracy the reproductions' sanity rule counts (docs/reproduce.md). Forbidding
every word that would complete an n-gram already in the output is the usual decoding-time
remedy (OpenNMT-py's ``block_ngram_repeat``, fairseq's ``no_repeat_ngram_size``). It
changes the search, not the model: a loop is cut where it starts, and the model's
probability of what it says instead is kept as its score.

`RepeatsBlocked` wraps a model as `rnmt.search.prefix.PrefixForced` does: each row's output
so far travels in the state dict (a fixed-width buffer, so a CUDA graph of the step keeps
its shapes), which every search already repeats, reorders and compacts. Greedy search, beam
search, sampling and the constrained search therefore all honour it. A row whose every
allowed word would be blocked is left alone (its only word may be forced: a prefix, or the
end of sentence at the length limit), so blocking never ends a hypothesis.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor

from rnmt.models.base import TensorDict, TranslationModel

HISTORY = "no_repeat.history"  # state: [R, L] BOS and the words so far; pad after them
POSITION = "no_repeat.position"  # state: [R] where the previous word goes in HISTORY
ROWS = "no_repeat.rows"  # memory: the source mask, for the batch's size and device


def blocked_words(history: Tensor, position: Tensor, n: int, vocab_size: int) -> Tensor:
    """``[R, V]`` True where word w after row r's output would repeat an n-gram of it.

    ``history[r, :position[r] + 1]`` is row r's output so far (BOS first). An n-gram ending
    in w is new unless some earlier window ``history[r, j : j + n]`` inside the output has
    the output's last n - 1 words as its first n - 1 and w as its last.
    """
    R, L = history.shape
    if L < n:
        return torch.zeros(R, vocab_size, dtype=torch.bool, device=history.device)
    windows = history.unfold(1, n, 1)  # [R, L - n + 1, n]
    starts = torch.arange(L - n + 1, device=history.device)
    inside = starts.unsqueeze(0) + (n - 1) <= position.unsqueeze(1)  # the whole window is output
    if n > 1:
        offsets = torch.arange(2 - n, 1, device=history.device)
        last = history.gather(1, (position.unsqueeze(1) + offsets).clamp(min=0))  # [R, n - 1]
        inside &= (windows[..., :-1] == last.unsqueeze(1)).all(-1)
        inside &= position.unsqueeze(1) >= n - 2  # the output has n - 1 words to match
    # Each matching window marks its last word; the others mark a spare column, dropped after.
    words = windows[..., -1].masked_fill(~inside, vocab_size)
    marks = torch.zeros(R, vocab_size + 1, dtype=torch.bool, device=history.device)
    return marks.scatter_(1, words, True)[:, :vocab_size]


class RepeatsBlocked(TranslationModel):
    """``model`` whose outputs never contain an n-gram twice (``n`` subwords)."""

    def __init__(self, model: TranslationModel, n: int, max_len: int) -> None:
        super().__init__()
        if n < 1:
            raise ValueError(f"n-gram size must be at least 1, got {n}")
        self.inner, self.n, self.width = model, n, max_len + 1  # BOS and up to max_len words
        self.pad_id, self.bos_id, self.eos_id = model.pad_id, model.bos_id, model.eos_id
        self.beam_shares_memory = model.beam_shares_memory

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        return {**self.inner.encode(src, src_mask), ROWS: src_mask}

    def init_state(self, memory: TensorDict) -> TensorDict:
        rows = memory[ROWS]
        state = self.inner.init_state(_without(memory, (ROWS,)))
        return {**state, HISTORY: rows.new_full((rows.size(0), self.width), self.pad_id, dtype=torch.long),
                POSITION: rows.new_zeros(rows.size(0), dtype=torch.long)}

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict, TensorDict]:
        log_probs, new_state, extras = self.inner.step(prev_tokens, _without(state, (HISTORY, POSITION)),
                                                       _without(memory, (ROWS,)))
        position = state[POSITION].clamp(max=self.width - 1)
        history = state[HISTORY].scatter(1, position.unsqueeze(1), prev_tokens.unsqueeze(1))
        blocked = blocked_words(history, position, self.n, log_probs.size(1))
        allowed = torch.isfinite(log_probs)
        blocked &= (allowed & ~blocked).any(1, keepdim=True)  # never a row's last way on
        log_probs = log_probs.masked_fill(blocked, float("-inf"))
        return log_probs, {**new_state, HISTORY: history, POSITION: position + 1}, extras


def _without(tree: TensorDict, keys: Tuple[str, ...]) -> TensorDict:
    return {k: v for k, v in tree.items() if k not in keys}


def with_repeats_blocked(model: TranslationModel, n: int, max_len: Tensor) -> TranslationModel:
    """The model to search with: ``model`` itself when ``n`` is 0 (blocking off)."""
    return model if n <= 0 else RepeatsBlocked(model, n, int(max_len.max()))
