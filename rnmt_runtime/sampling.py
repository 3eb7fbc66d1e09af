"""Sampling instead of search (rnmt's `rnmt.search.sampling`, in numpy).

The uniform number behind each draw is the same counter-based hash of (seed, line key,
sample number, step) as rnmt's, so a line's draws do not depend on its batch; the draw
inverts the cumulative distribution at that number after the temperature, epsilon, top-k and
top-p cuts. The distribution itself is computed by onnxruntime rather than PyTorch, so a number
that falls within rounding of a boundary between two words may pick the other one: the
runtime samples from the same distribution, not always the very same words as rnmt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from rnmt_runtime.search import (
    Arrays,
    Hypothesis,
    check_stop,
    force_eos,
    length_penalty,
    mask_specials,
    repeat_rows,
    select,
)

MASK = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class Sampling:
    topk: int = 0  # 0: every word
    topp: float = 1.0  # 1: no nucleus cut
    temperature: float = 1.0
    seed: int = 1
    epsilon: float = 0.0  # 0: no cut; else no word of probability below it (after the temperature)


def _mix(x: np.ndarray) -> np.ndarray:
    """The "lowbias32" integer hash on 32-bit values held in uint64 (products fit in 64 bits)."""
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & MASK
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & MASK
    return x ^ (x >> np.uint64(16))


def row_streams(seed: int, keys: Sequence[int], n: int) -> np.ndarray:
    seed %= 1 << 64
    s = _mix(np.array([(seed ^ (seed >> 32)) & 0xFFFFFFFF], dtype=np.uint64))
    lines = np.array([k % (1 << 32) for k in keys], dtype=np.uint64)
    per_line = _mix(s ^ lines)
    return _mix(np.repeat(per_line, n) ^ np.tile(np.arange(n, dtype=np.uint64), len(keys)))


def uniforms(streams: np.ndarray, step: int) -> np.ndarray:
    h = _mix(streams ^ _mix(np.full_like(streams, step & 0xFFFFFFFF)))
    return (h >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def draw(log_probs: np.ndarray, sampling: Sampling, u: np.ndarray) -> np.ndarray:
    """The word of each row at ``u`` of its (tempered, cut) distribution."""
    x = log_probs.astype(np.float32)
    if sampling.temperature != 1.0:
        top = x.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", over="ignore"):
            scaled = np.where(x == top, np.float32(0.0), (x - top) / np.float32(sampling.temperature))
        x = np.where(np.isfinite(x), scaled, x).astype(np.float32)
    probs: Optional[np.ndarray] = None
    if sampling.epsilon > 0.0:  # epsilon sampling: the whole distribution's tail, the best word kept
        p = _softmax(x)
        cut = (p < sampling.epsilon) & (p < p.max(axis=1, keepdims=True))
        probs = np.where(cut, np.float32(0.0), p)  # the weights to invert, unless top-k or top-p cut further
        if 0 < sampling.topk < x.shape[1] or sampling.topp < 1.0:
            x, probs = np.where(cut, np.float32(-np.inf), x), None
    ids: Optional[np.ndarray] = None
    if 0 < sampling.topk < x.shape[1] or sampling.topp < 1.0:
        ids = np.argsort(-x, axis=1, kind="stable")
        if 0 < sampling.topk < x.shape[1]:
            ids = ids[:, :sampling.topk]
        x = np.take_along_axis(x, ids, axis=1)
    if probs is None:
        probs = _softmax(x)
    if sampling.topp < 1.0:
        probs = np.where(np.cumsum(probs, axis=1) - probs >= sampling.topp, np.float32(0.0), probs)
    cdf = np.cumsum(probs, axis=1)
    total = cdf[:, -1:]
    pick = (cdf <= u[:, None] * total).sum(axis=1)  # searchsorted(right=True) row by row
    last = (cdf < total).sum(axis=1)  # the word where the total is reached: the last one with mass
    pick = np.minimum(pick, last)
    return pick if ids is None else np.take_along_axis(ids, pick[:, None], axis=1)[:, 0]


def sample_search(model: Any, src: np.ndarray, src_mask: np.ndarray, max_len: np.ndarray, sampling: Sampling,
                  keys: Sequence[int], n: int = 1, alpha: float = 0.6, normalize: str = "gnmt",
                  should_stop: Optional[Callable[[], bool]] = None) -> List[List[Hypothesis]]:
    """``n`` samples per sentence, best score first (scores as beam search's)."""
    B = src.shape[0]
    memory = model.encode(src, src_mask)
    state: Arrays = repeat_rows(model.init_state(memory), n)
    shared = model.beam_shares_memory
    if not shared:
        memory = repeat_rows(memory, n)
    streams = row_streams(sampling.seed, keys, n)
    sent_ids = np.arange(B)
    row_max = np.repeat(np.asarray(max_len, dtype=np.int64), n)
    prev = np.full(B * n, model.bos_id, dtype=np.int64)
    history = np.zeros((B * n, 0), dtype=np.int64)
    logprob = np.zeros(B * n, dtype=np.float32)
    ended = np.zeros(B * n, dtype=bool)
    collected = np.zeros(B, dtype=bool)
    results: List[List[Hypothesis]] = [[] for _ in range(B)]
    t = 0
    while sent_ids.size:
        check_stop(should_stop)
        log_probs, state, _ = model.step(prev, state, memory)
        mask_specials(log_probs, model)
        force_eos(log_probs, (t + 1 >= row_max) & ~ended, model.eos_id)
        tok = draw(log_probs, sampling, uniforms(streams, t))
        logprob += np.where(ended, np.float32(0.0), log_probs[np.arange(tok.size), tok])
        tok = np.where(ended, model.eos_id, tok)
        history = np.concatenate([history, tok[:, None]], 1)
        ended |= (tok == model.eos_id) | (t + 1 >= row_max)
        prev, t = tok, t + 1
        done = ended.reshape(-1, n).all(1)
        for s in np.nonzero(done & ~collected)[0]:
            results[int(sent_ids[s])].extend(_finish(history, logprob, s, n, model.eos_id, alpha, normalize))
        collected |= done
        if done.all() or 4 * int(done.sum()) >= done.size:
            keep = np.nonzero(~done)[0]
            rows = (keep[:, None] * n + np.arange(n)).reshape(-1)
            sent_ids, collected = sent_ids[keep], collected[keep]
            memory, state = select(memory, keep if shared else rows), select(state, rows)
            streams, row_max, prev = streams[rows], row_max[rows], prev[rows]
            logprob, ended, history = logprob[rows], ended[rows], history[rows]
    return [sorted(hyps, key=lambda h: -h.score) for hyps in results]


def _finish(history: np.ndarray, logprob: np.ndarray, s: int, n: int, eos_id: int, alpha: float,
            normalize: str) -> List[Hypothesis]:
    out = []
    for r in range(s * n, s * n + n):
        seq = history[r].tolist()
        length = seq.index(eos_id) + 1 if eos_id in seq else len(seq)
        lp = float(logprob[r])
        out.append(Hypothesis(seq[:length - 1] if seq[length - 1] == eos_id else seq[:length],
                              lp / length_penalty(float(length), alpha, normalize), lp))
    return out
