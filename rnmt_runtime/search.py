"""Greedy and batched beam search in numpy, step for step as rnmt's PyTorch search
(`rnmt.search.beam`), so that both find the same n-best lists with the same scores.

A model here is anything with ``encode``, ``init_state`` and ``step`` over dicts of numpy
arrays (`rnmt_runtime.graphs.ExportedModel`, or it wrapped by `rnmt_runtime.forcing`).
Beam search keeps ``beam`` hypotheses per sentence in ``B * beam`` rows; the source memory
is kept once per sentence when the model allows it (``beam_shares_memory``), else once per
row. A sentence whose beam has ``beam`` finished hypotheses is dead; the dead sentences are
dropped from the batch once they are a quarter of it (dropping copies the memory).

Scores follow GNMT (Wu et al. 2016, eq. 14): a finished hypothesis of log-probability logP
and length |Y| (end of sentence included) scores logP / lp(|Y|) with
``lp = ((5 + |Y|) / 6) ** alpha`` ("gnmt"), ``|Y|`` ("length") or 1 ("none"), plus, with a
coverage weight beta above 0, ``cp = beta * sum_i log(min(sum_j p_ij, 1))`` over the real
source positions i of its attention totals (each at least `FLOOR`), as rnmt's
`rnmt.search.coverage`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

Arrays = Dict[str, np.ndarray]
NEG_INF = np.float32(-np.inf)
FLOOR = np.float32(1e-6)  # the least attention total a source word is credited with (rnmt's)


@dataclass
class Hypothesis:
    tokens: List[int]  # without BOS / EOS
    score: float  # length-normalised log-probability (what the n-best list ranks by)
    logprob: float  # total log-probability, EOS included
    attention: Optional[np.ndarray] = None  # [len(tokens) + 1, S] when asked for


class SearchStopped(Exception):
    """The ``should_stop`` callback said so (a server's request expired)."""


def length_penalty(length: float, alpha: float, normalize: str) -> float:
    if normalize == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    if normalize == "length":
        return length
    if normalize == "none":
        return 1.0
    raise ValueError(f"unknown length normalisation '{normalize}'")


def select(tree: Arrays, index: np.ndarray) -> Arrays:
    return {k: v[index] for k, v in tree.items()}


def repeat_rows(tree: Arrays, times: int) -> Arrays:
    return {k: np.repeat(v, times, axis=0) for k, v in tree.items()}


def mask_specials(log_probs: np.ndarray, model: Any) -> None:
    log_probs[:, model.pad_id] = NEG_INF
    log_probs[:, model.bos_id] = NEG_INF


def force_eos(log_probs: np.ndarray, rows: np.ndarray, eos_id: int) -> None:
    """At its length limit a row may only end; the end keeps its own log-probability."""
    if rows.any():
        eos = log_probs[rows, eos_id]
        log_probs[rows] = NEG_INF
        log_probs[rows, eos_id] = eos


def check_stop(should_stop: Optional[Callable[[], bool]]) -> None:
    if should_stop is not None and should_stop():
        raise SearchStopped("search stopped before it finished")


def greedy_search(model: Any, src: np.ndarray, src_mask: np.ndarray, max_len: np.ndarray,
                  return_attention: bool = False,
                  should_stop: Optional[Callable[[], bool]] = None) -> List[Hypothesis]:
    """The most probable word at every step until EOS or ``max_len[b]`` tokens (EOS included)."""
    B = src.shape[0]
    memory = model.encode(src, src_mask)
    state = model.init_state(memory)
    prev = np.full(B, model.bos_id, dtype=np.int64)
    rows = np.arange(B)
    tokens: List[np.ndarray] = []
    attn: List[np.ndarray] = []
    logprob = np.zeros(B, dtype=np.float32)
    finished = np.zeros(B, dtype=bool)
    lengths = np.zeros(B, dtype=np.int64)
    for t in range(int(max_len.max())):
        check_stop(should_stop)
        log_probs, state, extras = model.step(prev, state, memory)
        mask_specials(log_probs, model)
        force_eos(log_probs, (t + 1 >= max_len) & ~finished, model.eos_id)
        prev = log_probs.argmax(axis=1)
        logprob += np.where(finished, np.float32(0.0), log_probs[rows, prev])
        lengths += ~finished
        tokens.append(prev)
        if return_attention:
            attn.append(extras["attention"])
        finished |= prev == model.eos_id
        if finished.all():
            break
    out = np.stack(tokens, 1).tolist()
    hyps = []
    for b in range(B):
        n = int(lengths[b])
        seq = out[b][: n - 1] if out[b][n - 1] == model.eos_id else out[b][:n]
        attention = np.stack(attn, 1)[b, :n] if return_attention else None
        hyps.append(Hypothesis(seq, float(logprob[b]), float(logprob[b]), attention))
    return hyps


BLOCK = 256  # candidates per block of `best_extensions`' pre-selection (about; see `block_width`)


@functools.cache
def block_width(V: int) -> int:
    """The block width for a vocabulary of ``V``: the divisor of ``V`` nearest `BLOCK`
    between half and twice it (a row then splits into whole blocks without a padded copy of
    the [rows x V] log-probabilities), else `BLOCK` with the last block padded. numpy
    reduces a short innermost axis slowly: at V = 8,000 and 200 rows, blocks of 64 took
    2.0 ms a step, blocks of 250 0.7 ms (docs/deploy.md, "Measured": the wider blocks)."""
    divisors = [d for d in range(BLOCK // 2, 2 * BLOCK + 1) if V % d == 0]
    return min(divisors, key=lambda d: (abs(d - BLOCK), d)) if divisors else BLOCK


def best_extensions(scores: np.ndarray, log_probs: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` best one-word extensions of each sentence's beam, best first: (score, beam,
    token), each ``[b, k]``; hypothesis (s, i) extended by w scores
    ``scores[s, i] + log_probs[s * K + i, w]`` (float32, as rnmt adds them).

    As rnmt's (`rnmt.search.beam.best_extensions`): the ``k`` best candidates lie in the ``k``
    blocks of candidates with the highest maxima (`block_width` each), so the selection runs
    over the block maxima and then over those ``k`` blocks only, instead of all ``K * V``. A
    block's maximum is taken on the log-probabilities and the row's score added after
    (rounding is monotonic, so max(x + s) == max(x) + s exactly): the [b * K, V] sums are
    never made."""
    b, K = scores.shape
    V = log_probs.shape[1]
    block = block_width(V)
    width = -(-V // block) * block
    if width != V:  # rows padded to whole blocks with -inf
        log_probs = np.concatenate([log_probs, np.full((b * K, width - V), NEG_INF, dtype=log_probs.dtype)], 1)
    per_row = width // block
    blocks = log_probs.reshape(b * K, per_row, block)
    row_scores = scores.reshape(-1, 1)
    maxima = (blocks.max(axis=2) + row_scores).reshape(b, K * per_row)
    n_blocks = maxima.shape[1]
    if k < n_blocks:
        top_blocks = np.argpartition(-maxima, k - 1, axis=1)[:, :k]
    else:
        top_blocks = np.tile(np.arange(n_blocks), (b, 1))
    rows = np.arange(b)[:, None] * K + top_blocks // per_row  # [b, k] the row each chosen block is in
    inside = (blocks[rows, top_blocks % per_row] + row_scores[rows]).reshape(b, -1)
    m = inside.shape[1]
    pick = np.argpartition(-inside, k - 1, axis=1)[:, :k] if k < m else np.tile(np.arange(m), (b, 1))
    values = np.take_along_axis(inside, pick, axis=1)
    flat = np.take_along_axis(top_blocks, pick // block, axis=1) * block + pick % block  # index into K * width
    order = np.lexsort((flat, -values), axis=1)  # best first; equal scores by position, as a stable sort
    values, flat = np.take_along_axis(values, order, axis=1), np.take_along_axis(flat, order, axis=1)
    # a -inf candidate (fewer than k finite ones) may sit in the padding: any real token will do
    return values, flat // width, np.minimum(flat % width, V - 1)


@dataclass
class _Beams:
    """The per-row arrays of a beam search, reordered and compacted together."""

    memory: Arrays
    state: Arrays
    history: np.ndarray  # [rows, t] the tokens so far
    prev: np.ndarray  # [rows]
    attention: Optional[np.ndarray]  # [rows, t, S] when asked for
    source_mask: np.ndarray  # [b, S] 1.0 at a real source position (the coverage penalty's)
    totals: Optional[np.ndarray] = None  # [rows, S] attention summed over the steps taken (coverage on)

    def compact(self, keep: np.ndarray, K: int, shared: bool) -> None:
        rows = (keep[:, None] * K + np.arange(K)).reshape(-1)
        self.memory = select(self.memory, keep if shared else rows)
        self.state = select(self.state, rows)
        self.history, self.prev = self.history[rows], self.prev[rows]
        self.source_mask = self.source_mask[keep]
        if self.attention is not None:
            self.attention = self.attention[rows]
        if self.totals is not None:
            self.totals = self.totals[rows]


def coverage_penalty(beta: float, totals: np.ndarray, source_mask: np.ndarray) -> np.ndarray:
    """GNMT's cp of hypotheses with attention ``totals`` [n, S] over sources ``source_mask``
    [n, S]: ``beta * sum_i log(min(total_i, 1))`` over real positions, each total at least `FLOOR`."""
    return np.float32(beta) * (np.log(np.clip(totals, FLOOR, np.float32(1.0))) * source_mask).sum(1)


def beam_search(model: Any, src: np.ndarray, src_mask: np.ndarray, max_len: np.ndarray, beam: int = 5,
                alpha: float = 0.6, normalize: str = "gnmt", nbest: int = 1, return_attention: bool = False,
                should_stop: Optional[Callable[[], bool]] = None, coverage: float = 0.0) -> List[List[Hypothesis]]:
    """The ``nbest`` best finished hypotheses of each sentence (``max_len[b]`` bounds sentence
    b's output, EOS included: at that step only EOS is allowed, so every sentence ends);
    ``coverage`` > 0 adds GNMT's coverage penalty with that beta to the finished ones' scores.

    Over 60 lines because it is one loop whose steps share a dozen arrays; the order
    of its operations is rnmt's, on which equal scores depend."""
    B, K = src.shape[0], beam
    memory = model.encode(src, src_mask)
    state = repeat_rows(model.init_state(memory), K)
    shared = model.beam_shares_memory
    beams = _Beams(memory if shared else repeat_rows(memory, K), state,
                   np.full((B * K, 0), model.bos_id, dtype=np.int64),
                   np.full(B * K, model.bos_id, dtype=np.int64), None, np.asarray(src_mask, dtype=np.float32))
    sent_ids, max_len = list(range(B)), np.asarray(max_len, dtype=np.int64)
    scores = np.full((B, K), NEG_INF, dtype=np.float32)
    scores[:, 0] = 0.0  # all beams start identical: only the first may expand
    counts = np.zeros(B, dtype=np.int64)
    finished: List[List[Hypothesis]] = [[] for _ in range(B)]
    t, longest = 0, int(max_len.max())
    while sent_ids:
        check_stop(should_stop)
        if t >= longest:  # every row must end at its limit: going past it is a bug, never a long input
            raise RuntimeError(f"beam search passed the longest length limit ({longest}) with sentences open")
        b = len(sent_ids)
        log_probs, beams.state, extras = model.step(beams.prev, beams.state, beams.memory)
        mask_specials(log_probs, model)
        if t + 1 >= int(max_len.min()):
            force_eos(log_probs, np.repeat(t + 1 >= max_len, K), model.eos_id)
        if return_attention:
            step_attn = extras["attention"][:, None]
            beams.attention = step_attn if beams.attention is None else np.concatenate([beams.attention, step_attn], 1)
        now = None  # the attention totals with this step's (coverage on)
        if coverage > 0:
            step_totals = extras["attention"].astype(np.float32)
            now = step_totals if beams.totals is None else beams.totals + step_totals
        n = min(2 * K, K * log_probs.shape[1])
        top_scores, top_beam, top_tok = best_extensions(scores, log_probs, n)
        is_eos = top_tok == model.eos_id
        finalize = is_eos & (np.arange(n) < K)[None, :] & np.isfinite(top_scores)
        cand_rows = (np.arange(b) * K)[:, None] + top_beam
        alive = np.where(is_eos, NEG_INF, top_scores)
        pick = np.argsort(-alive, axis=1, kind="stable")[:, :K]  # the K best that did not end continue
        alive_scores = np.take_along_axis(alive, pick, axis=1)
        alive_rows = np.take_along_axis(cand_rows, pick, axis=1).reshape(-1)
        alive_tok = np.take_along_axis(top_tok, pick, axis=1)
        counts += finalize.sum(1)
        done = (counts >= K) | ~np.isfinite(alive_scores[:, 0])
        if finalize.any():
            lp = length_penalty(float(t + 1), alpha, normalize)
            where = np.nonzero(finalize)
            rows = cand_rows[where]
            cp = (coverage_penalty(coverage, now[rows], beams.source_mask[where[0]]).tolist() if now is not None
                  else [0.0] * len(rows))
            for k, (s, row) in enumerate(zip(where[0], rows)):
                logp = float(top_scores[s, where[1][k]])
                attn = beams.attention[row] if beams.attention is not None else None
                finished[sent_ids[s]].append(Hypothesis(beams.history[row].tolist(), logp / lp + cp[k], logp, attn))
        beams.history = np.concatenate([beams.history[alive_rows], alive_tok.reshape(-1, 1)], 1)
        if beams.attention is not None:
            beams.attention = beams.attention[alive_rows]
        if now is not None:
            beams.totals = now[alive_rows]
        beams.state = select(beams.state, alive_rows)
        scores, beams.prev = np.where(done[:, None], NEG_INF, alive_scores), alive_tok.reshape(-1)
        n_done = int(done.sum())
        if n_done == b:
            break
        if 4 * n_done >= b and n_done > 0:  # compaction copies the memory: not for one sentence of many
            keep = np.nonzero(~done)[0]
            sent_ids = [sent_ids[i] for i in keep]
            max_len, scores, counts = max_len[keep], scores[keep], counts[keep]
            beams.compact(keep, K, shared)
        t += 1
    return [sorted(hyps, key=lambda h: -h.score)[:nbest] for hyps in finished]
