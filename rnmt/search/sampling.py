"""Sampling instead of search: every output word drawn from the model's distribution.

Sampled outputs are what back-translation wants (Edunov et al. 2018: sampled synthetic
sources train better models than beam-search ones): ``n`` samples per sentence run as
``B * n`` rows of one batch, like a beam, sharing the sentence's memory when the model
allows it. The distribution may be sharpened or flattened (``temperature``), rid of every
word less probable than ``epsilon`` (epsilon sampling, Hewitt et al. 2022: the tail a model
smooths over, whatever the shape of the head) and cut to its ``topk`` most probable words or
to the smallest set of them whose mass reaches ``topp`` (nucleus sampling).

Draws are reproducible per line: the uniform number behind each draw is a hash of (seed,
line key, sample number, step), not the next value of a shared generator, so a line gets
the same samples whatever else is in its batch, however the input is split into batches or
chunks, and on any device. The translator keys a line by its position in the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import torch
from torch import Tensor

from rnmt.errors import UserError
from rnmt.models.base import TranslationModel, select
from rnmt.search.beam import SearchHypothesis, _check, _force_eos, _mask_specials, encode_rows, length_penalty

SEED_LOW, SEED_HIGH = 0, 2 ** 32 - 1  # rnmt.config.SEED: the seeds whose draws differ


@dataclass(frozen=True)
class Sampling:
    """How to draw: ``topk`` (0: every word), ``topp`` (1: no nucleus cut), ``temperature``
    (log-probabilities divided by it before the cuts), ``epsilon`` (0: no cut; else words
    of probability below it, after the temperature, are never drawn) and the ``seed`` of
    the draws."""

    topk: int = 0
    topp: float = 1.0
    temperature: float = 1.0
    seed: int = 1
    epsilon: float = 0.0


def sampling_options(sample: bool, topk: Optional[int] = None, topp: Optional[float] = None,
                     temperature: Optional[float] = None, seed: Optional[int] = None, beam: Optional[int] = None,
                     greedy: bool = False, dash: str = "", epsilon: Optional[float] = None) -> Optional[Sampling]:
    """Check the sampling options as given (``dash="--"`` names them as command-line
    options in the messages); None when not sampling. Every mistake is a `UserError`."""
    given = {"topk": topk, "topp": topp, "temperature": temperature, "seed": seed, "epsilon": epsilon}
    for name, value in given.items():  # Python callers may pass anything
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and (not number or name in ("topk", "seed") and not isinstance(value, int)):
            kind = "an integer" if name in ("topk", "seed") else "a number"
            raise UserError(f"{dash}{name} must be {kind}, got {value!r}")
    if not sample:
        named = [f"{dash}{name}" for name, value in given.items() if value is not None]
        if named:
            verb = "applies" if len(named) == 1 else "apply"
            raise UserError(f"{', '.join(named)} {verb} only with {dash}sample (beam search does not sample)")
        return None
    if beam is not None or greedy:
        raise UserError(f"{dash}sample draws each word at random: it does not combine with "
                        f"{dash}{'beam' if beam is not None else 'greedy'}")
    if topk is not None and topk < 1:
        raise UserError(f"{dash}topk must be at least 1, got {topk}")
    if topp is not None and not 0.0 < topp <= 1.0:
        raise UserError(f"{dash}topp must be in (0, 1], got {topp}")
    if temperature is not None and not temperature > 0.0:  # NaN fails too; inf: a uniform draw (see draw)
        raise UserError(f"{dash}temperature must be a number above 0 (inf included), got {temperature}")
    if epsilon is not None and not 0.0 <= epsilon < 1.0:  # NaN fails too
        raise UserError(f"{dash}epsilon must be in [0, 1), got {epsilon}")
    if seed is not None and not SEED_LOW <= seed <= SEED_HIGH:
        # the draws hash the seed's 32 bits: a seed outside them would repeat another's samples
        raise UserError(f"{dash}seed must be an integer from {SEED_LOW} to {SEED_HIGH}, got {seed}")
    return Sampling(topk=topk or 0, topp=1.0 if topp is None else topp,
                    temperature=1.0 if temperature is None else temperature, seed=1 if seed is None else seed,
                    epsilon=epsilon or 0.0)


# -- counter-based uniform numbers ---------------------------------------------------
# 32-bit integer arithmetic on int64 tensors: products are split in 16-bit halves so that
# nothing overflows (signed overflow is not something to rely on across devices).
_MASK = 0xFFFFFFFF


def _mul32(x: Tensor, m: int) -> Tensor:
    """``x * m mod 2**32`` for ``0 <= x < 2**32``."""
    return ((x & 0xFFFF) * m + ((((x >> 16) * m) & 0xFFFF) << 16)) & _MASK


def _mix(x: Tensor) -> Tensor:
    """A 32-bit integer hash with good avalanche (the "lowbias32" constants)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def row_streams(seed: int, keys: Sequence[int], n: int, device: torch.device) -> Tensor:
    """One stream id per row: rows ``i * n .. i * n + n - 1`` are the samples of line ``keys[i]``."""
    seed %= 1 << 64
    s = _mix(torch.tensor([(seed ^ (seed >> 32)) & _MASK], dtype=torch.long, device=device))
    lines = torch.tensor([k % (1 << 32) for k in keys], dtype=torch.long, device=device)
    per_line = _mix(s ^ lines)
    return _mix(per_line.repeat_interleave(n) ^ torch.arange(n, device=device).repeat(len(keys)))


def uniforms(streams: Tensor, step: int) -> Tensor:
    """One number in [0, 1) per stream for ``step`` (24 bits: exact in float32)."""
    h = _mix(streams ^ _mix(torch.full_like(streams, step & _MASK)))
    return (h >> 8).float() * (1.0 / (1 << 24))


# -- one draw per row ------------------------------------------------------------------
def draw(log_probs: Tensor, sampling: Sampling, u: Tensor) -> Tensor:
    """The word of each row, by inverting the cumulative distribution at ``u`` [R].

    Temperature, then epsilon, then top-k, then top-p; the kept words are renormalised
    (the most probable word is always kept). Top-k and top-p work on the candidates sorted
    by probability, so the inversion runs over k words (or the sorted vocabulary) rather
    than the whole unsorted row when they are given."""
    x = log_probs.float()
    if sampling.temperature != 1.0:
        # Relative to each row's best word, which stays at 0, so that no temperature sends
        # every word to -inf or NaN (-0.5 / 1e-30 overflows float32, 1e-46 is 0 there, -inf /
        # inf is NaN): a tiny one leaves the best word, an infinite one a uniform draw among
        # the words allowed.
        top = x.max(dim=1, keepdim=True).values
        scaled = ((x - top) / sampling.temperature).masked_fill(x == top, 0.0)
        x = torch.where(torch.isfinite(x), scaled, x)
    probs: Optional[Tensor] = None
    if sampling.epsilon > 0.0:
        # the cut reads the whole distribution's probabilities (after the temperature)
        p = torch.softmax(x, dim=1)
        cut = (p < sampling.epsilon) & (p < p.max(dim=1, keepdim=True).values)
        probs = p.masked_fill(cut, 0.0)  # the weights to invert, unless top-k or top-p cut further
        if 0 < sampling.topk < x.size(1) or sampling.topp < 1.0:
            x, probs = x.masked_fill(cut, float("-inf")), None
    ids: Optional[Tensor] = None
    if 0 < sampling.topk < x.size(1):
        x, ids = x.topk(sampling.topk, dim=1)
    elif sampling.topp < 1.0:
        x, ids = x.sort(dim=1, descending=True)
    if probs is None:
        probs = torch.softmax(x, dim=1)
    if sampling.topp < 1.0:
        # Keep a word while the mass before it is below topp: the most probable one always.
        probs = probs.masked_fill(probs.cumsum(1) - probs >= sampling.topp, 0.0)
    cdf = probs.cumsum(1)  # the weights need not sum to one: u is scaled by each row's total
    total = cdf[:, -1:].contiguous()
    pick = torch.searchsorted(cdf, u.unsqueeze(1) * total, right=True)
    # Rounding may put u * total at the very end: never step past the word where the total
    # is reached (the last one with mass; a binary search, not a pass over the row).
    last = torch.searchsorted(cdf, total, right=False)
    pick = torch.minimum(pick, last).squeeze(1)
    return pick if ids is None else ids.gather(1, pick.unsqueeze(1)).squeeze(1)


@torch.no_grad()
def sample_search(model: TranslationModel, src: Tensor, src_mask: Tensor, max_len: Tensor, sampling: Sampling,
                  keys: Sequence[int], n: int = 1, alpha: float = 0.6, normalize: str = "gnmt",
                  return_attention: bool = False,
                  should_stop: Optional[Callable[[], bool]] = None) -> List[List[SearchHypothesis]]:
    """``n`` samples of each sentence, best score first (scores as beam search's: the
    model's log-probability, untempered, over the length penalty).

    ``keys[b]`` identifies sentence b's random streams (its line number). ``max_len`` and
    ``should_stop`` work as in `beam_search`. A sentence leaves the batch once all its
    samples have ended (compacted, as in beam search, when a quarter of the batch is done)."""
    B, device = src.size(0), src.device
    memory, state, shared = encode_rows(model, src, src_mask, n)
    streams = row_streams(sampling.seed, keys, n, device)
    sent_ids = torch.arange(B, device=device)
    row_max = max_len.to(device).repeat_interleave(n)
    prev = torch.full((B * n,), model.bos_id, dtype=torch.long, device=device)
    history = prev.new_empty(B * n, 0)
    attn_history: Optional[Tensor] = None
    logprob = torch.zeros(B * n, device=device)
    ended = torch.zeros(B * n, dtype=torch.bool, device=device)
    collected = torch.zeros(B, dtype=torch.bool, device=device)
    results: List[List[SearchHypothesis]] = [[] for _ in range(B)]
    t = 0
    while sent_ids.numel() > 0:
        _check(should_stop)
        log_probs, state, extras = model.step(prev, state, memory)
        log_probs = _mask_specials(log_probs, model)
        _force_eos(log_probs, (t + 1 >= row_max) & ~ended, model.eos_id)
        tok = draw(log_probs, sampling, uniforms(streams, t))
        logprob += log_probs.gather(1, tok.unsqueeze(1)).squeeze(1).float().masked_fill(ended, 0.0)
        tok = tok.masked_fill(ended, model.eos_id)  # an ended row repeats EOS: cut off below
        history = torch.cat([history, tok.unsqueeze(1)], 1)
        if return_attention:
            step_attn = extras["attention"].unsqueeze(1)
            attn_history = step_attn if attn_history is None else torch.cat([attn_history, step_attn], 1)
        ended |= (tok == model.eos_id) | (t + 1 >= row_max)  # the length limit ends a row whatever was drawn
        prev = tok
        t += 1
        done = ended.view(-1, n).all(1)
        new = done & ~collected
        if bool(new.any()):
            _collect(results, torch.nonzero(new).squeeze(1).tolist(), sent_ids, history, attn_history, logprob,
                     n, model.eos_id, alpha, normalize)
            collected |= new
        # Dead sentences stay as rows until a quarter of the batch is dead (compacting
        # copies the memory), as in beam search.
        if bool(done.all()) or 4 * int(done.sum()) >= done.numel():
            keep = torch.nonzero(~done).squeeze(1)
            rows = (keep.unsqueeze(1) * n + torch.arange(n, device=device)).view(-1)
            sent_ids, collected = sent_ids[keep], collected[keep]
            memory, state = select(memory, keep if shared else rows), select(state, rows)
            streams, row_max, prev = streams[rows], row_max[rows], prev[rows]
            logprob, ended, history = logprob[rows], ended[rows], history.index_select(0, rows)
            if attn_history is not None:
                attn_history = attn_history.index_select(0, rows)
    return [sorted(hyps, key=lambda h: -h.score) for hyps in results]


def _collect(results: List[List[SearchHypothesis]], sents: List[int], sent_ids: Tensor, history: Tensor,
             attn_history: Optional[Tensor], logprob: Tensor, n: int, eos_id: int, alpha: float,
             normalize: str) -> None:
    """Turn the rows of the finished sentences ``sents`` (current positions) into hypotheses."""
    for s in sents:
        for r in range(s * n, s * n + n):
            seq = history[r].tolist()
            length = seq.index(eos_id) + 1 if eos_id in seq else len(seq)
            attn = attn_history[r, :length].cpu() if attn_history is not None else None
            lp = float(logprob[r])
            results[int(sent_ids[s])].append(
                SearchHypothesis(seq[:length - 1] if seq[length - 1] == eos_id else seq[:length],
                           lp / length_penalty(float(length), alpha, normalize), lp, attn))
