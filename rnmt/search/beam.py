"""Greedy and batched beam search over any `TranslationModel`.

Beam search keeps ``beam`` hypotheses for every sentence of the batch in one tensor of
``B * beam`` rows, so each step is one call of ``model.step``. Source-side work is done
once: the memory (annotations and projected attention keys) is encoded per sentence, and
shared by the sentence's hypotheses (models with ``beam_shares_memory``) or else repeated
across the beam. A sentence leaves the batch as soon as it has ``beam``
finished hypotheses, so long sentences do not keep short ones computing.

Scores follow GNMT (Wu et al. 2016): a finished hypothesis of log-probability logP and
length |Y| (end-of-sentence included) scores logP / lp(|Y|), with
``lp = ((5 + |Y|) / 6) ** alpha`` ("gnmt"), ``|Y|`` ("length") or 1 ("none"), plus GNMT's
coverage penalty when ``coverage`` (its beta) is above 0 (`rnmt.search.coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional, Tuple

import torch
from torch import Tensor

from rnmt.models.base import TensorDict, TranslationModel, repeat_rows, select
from rnmt.search import fused_step, step_graphs
from rnmt.search.coverage import Coverage
from rnmt_runtime.search import length_penalty  # GNMT's lp: one definition for both searches


@dataclass
class SearchHypothesis:
    """A finished hypothesis of the search, in subword ids (the translator detokenises it;
    the public `rnmt.Hypothesis` and the server's `NBestHypothesis` are made from it)."""

    tokens: List[int]  # without BOS / EOS
    score: float  # length-normalised log-probability plus any coverage penalty (what the n-best ranks by)
    logprob: float  # total log-probability, EOS included
    attention: Optional[Tensor] = None  # [len(tokens) + 1, S] when requested


def _mask_specials(log_probs: Tensor, model: TranslationModel) -> Tensor:
    """No search ever writes padding or begin-of-sentence (the fused step's ``specials``)."""
    log_probs[:, model.pad_id] = float("-inf")
    log_probs[:, model.bos_id] = float("-inf")
    return log_probs


def _force_eos(log_probs: Tensor, rows: Tensor, eos_id: int) -> None:
    """At the length limit only EOS may follow; it keeps its own log-probability."""
    if bool(rows.any()):
        eos = log_probs[rows, eos_id]
        log_probs[rows] = float("-inf")
        log_probs[rows, eos_id] = eos


BLOCK = 64  # vocabulary entries per block of `best_extensions`' pre-selection


def one_topk_extensions(scores: Tensor, log_probs: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
    """`best_extensions` by one `topk` over all ``K * V`` candidates of each sentence (what it
    does for small vocabularies, and the reference it is tested and timed against)."""
    b, K = scores.shape
    V = log_probs.size(1)
    top_scores, flat = (scores.reshape(-1, 1) + log_probs).view(b, K * V).topk(k, dim=-1)
    return top_scores, flat // V, flat % V


def best_extensions(scores: Tensor, log_probs: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
    """The ``k`` best one-word extensions of each sentence's beam: (score, beam, token), each
    ``[b, k]`` sorted by score, where extending hypothesis ``(s, i)`` (score ``scores[s, i]``)
    with token ``w`` scores ``scores[s, i] + log_probs[s * K + i, w]``.

    Exact, and faster than `one_topk_extensions` on a CPU (docs/performance.md, "Decoding"):
    the candidates are cut into blocks of `BLOCK` words, and the ``k`` best lie in the ``k``
    blocks with the highest maxima (a candidate outside them is beaten by the ``k`` block
    maxima), so `topk` runs over the block maxima and then over ``k`` blocks only. On a GPU,
    where a step's time is the kernels it launches rather than their arithmetic, one `topk`
    (four kernels instead of about fourteen) is the better trade.
    """
    b, K = scores.shape
    V = log_probs.size(1)
    if K * V <= 4 * k * BLOCK or log_probs.is_cuda:  # too few blocks to pay, or launch-bound
        return one_topk_extensions(scores, log_probs, k)
    Vp = -(-V // BLOCK) * BLOCK  # each hypothesis's row padded to whole blocks
    cand = log_probs.new_empty(b * K, Vp)
    torch.add(log_probs, scores.reshape(-1, 1), out=cand[:, :V])
    cand[:, V:] = float("-inf")
    blocks = cand.view(b, K * Vp // BLOCK, BLOCK)
    _, top_blocks = blocks.amax(-1).topk(k, dim=-1)  # [b, k]
    inside = blocks.gather(1, top_blocks.unsqueeze(-1).expand(-1, -1, BLOCK)).view(b, k * BLOCK)
    top_scores, pos = inside.topk(k, dim=-1)
    flat = top_blocks.gather(1, pos // BLOCK) * BLOCK + pos % BLOCK  # index into K * Vp
    # A -inf candidate (fewer than k finite ones) may sit in the padding: any real token will do.
    return top_scores, flat // Vp, (flat % Vp).clamp_max(V - 1)


class SearchStopped(Exception):
    """Raised by a search whose ``should_stop`` callback said so (e.g. its request expired)."""


def compaction_due(dead: int, batch: int) -> bool:
    """Whether to drop the finished sentences from a batched search now. A finished sentence
    first stays in the batch as dead rows (scores -inf: they add no hypotheses); the batch is
    compacted once a quarter of it is dead, because compacting copies the whole source memory
    and one sentence of many is not worth it."""
    return dead > 0 and 4 * dead >= batch


def rows_of(keep: Tensor, K: int) -> Tensor:
    """The batch rows of the sentences ``keep``, each sentence's K rows together."""
    return (keep.unsqueeze(1) * K + torch.arange(K, device=keep.device)).view(-1)


def first_rows_of(b: int, K: int, device: torch.device) -> Tensor:
    """[b, 1]: the batch row of each sentence's first hypothesis."""
    return torch.arange(b, device=device).unsqueeze(1) * K


def encode_rows(model: TranslationModel, src: Tensor, src_mask: Tensor,
                K: int) -> Tuple[TensorDict, TensorDict, bool]:
    """(memory, decoder state, shared) for ``K`` rows per sentence: the source encoded once,
    the start state repeated to every row, and the memory too unless the model reads one row
    per sentence (``shared``: `beam_shares_memory`)."""
    memory = model.encode(src, src_mask)
    state = repeat_rows(model.init_state(memory), K)
    shared = model.beam_shares_memory
    if not shared:
        memory = repeat_rows(memory, K)
    return memory, state, shared


@dataclass
class BeamRows:
    """The per-row tensors of a batched beam search (`beam_search`, and
    `rnmt.search.constraints.constrained_beam_search`): the ``b`` sentences still searching,
    ``K`` hypotheses each, in ``b * K`` rows with each sentence's rows together."""

    K: int
    shared: bool  # the memory holds one row per sentence (`beam_shares_memory`), else one per hypothesis
    memory: TensorDict
    state: TensorDict
    scores: Tensor  # [b, K]: each hypothesis's log-probability (-inf: a dead row)
    history: Tensor  # [b * K, t]: the tokens so far
    prev: Tensor  # [b * K]: the last token
    max_len: Tensor  # [b]: output length limit, EOS included
    sent_ids: List[int]  # the original index of each sentence still searching
    cover: Optional[Coverage]  # attention totals when the coverage penalty is on
    attn_history: Optional[Tensor] = None  # [b * K, t, S] when attention is returned

    @classmethod
    def start(cls, model: TranslationModel, src: Tensor, src_mask: Tensor, max_len: Tensor, K: int,
              coverage: float) -> BeamRows:
        """The rows before the first step: the source encoded once, every hypothesis at BOS,
        and only each sentence's first one live (the K are identical: only one may expand)."""
        B, device = src.size(0), src.device
        memory, state, shared = encode_rows(model, src, src_mask, K)
        scores = torch.full((B, K), float("-inf"), device=device)
        scores[:, 0] = 0.0
        return cls(K, shared, memory, state, scores,
                   history=torch.full((B * K, 0), model.bos_id, dtype=torch.long, device=device),
                   prev=torch.full((B * K,), model.bos_id, dtype=torch.long, device=device),
                   max_len=max_len.to(device), sent_ids=list(range(B)), cover=Coverage.of(coverage, src_mask, K))

    def observe(self, extras: TensorDict, return_attention: bool) -> None:
        """Take in a step's attention: into the coverage totals, and the history when returned."""
        if self.cover is not None:
            self.cover.add_step(extras)
        if return_attention:
            step_attn = extras["attention"].unsqueeze(1)
            self.attn_history = step_attn if self.attn_history is None else torch.cat([self.attn_history, step_attn], 1)

    def advance(self, rows: Tensor, tokens: Tensor, scores: Tensor) -> None:
        """Go on with the hypotheses in ``rows`` ([b * K]), extended by ``tokens``, now scoring
        ``scores`` ([b, K])."""
        self.history = torch.cat([self.history.index_select(0, rows), tokens.view(-1, 1)], 1)
        if self.attn_history is not None:
            self.attn_history = self.attn_history.index_select(0, rows)
        if self.cover is not None:
            self.cover.advance(rows)
        self.state = select(self.state, rows)
        self.scores, self.prev = scores, tokens.view(-1)

    def compact(self, keep: Tensor) -> List[int]:
        """Keep only the sentences ``keep`` (indices into the batch); returns them as a list."""
        kept = keep.tolist()
        keep_rows = rows_of(keep, self.K)
        self.sent_ids = [self.sent_ids[i] for i in kept]
        self.max_len, self.scores = self.max_len[keep], self.scores[keep]
        self.memory = select(self.memory, keep if self.shared else keep_rows)
        self.state = select(self.state, keep_rows)
        self.history, self.prev = self.history.index_select(0, keep_rows), self.prev[keep_rows]
        if self.attn_history is not None:
            self.attn_history = self.attn_history.index_select(0, keep_rows)
        if self.cover is not None:
            self.cover.compact(keep, keep_rows)
        return kept


def _check(should_stop: Optional[Callable[[], bool]]) -> None:
    if should_stop is not None and should_stop():
        raise SearchStopped("search stopped before it finished")


def n_best(finished: List[List[SearchHypothesis]], nbest: int) -> List[List[SearchHypothesis]]:
    """Each sentence's ``nbest`` best finished hypotheses, best first."""
    return [sorted(hyps, key=lambda h: -h.score)[:nbest] for hyps in finished]


@torch.no_grad()
def greedy_search(model: TranslationModel, src: Tensor, src_mask: Tensor, max_len: Tensor,
                  return_attention: bool = False,
                  should_stop: Optional[Callable[[], bool]] = None) -> List[SearchHypothesis]:
    """Pick the most probable word at every step until EOS or ``max_len[b]`` tokens.

    ``should_stop`` is called before every step; when it returns True the search raises
    `SearchStopped` (a server abandons the work of requests whose deadline passed)."""
    B = src.size(0)
    graphed = step_graphs.applies(src)
    step = step_graphs.GraphedStep(model.step) if graphed else model.step
    fused = not graphed and fused_step.applies(model, src)
    specials = torch.tensor([model.pad_id, model.bos_id], device=src.device)
    no_scores = torch.zeros(B, 1)  # fused: each row is a sentence of one hypothesis, scoring 0
    memory = model.encode(src, src_mask)
    state = model.init_state(memory)
    prev = src.new_full((B,), model.bos_id)
    tokens, logprob, attn = [], src.new_zeros(B, dtype=torch.float), []
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    lengths = torch.zeros(B, dtype=torch.long, device=src.device)
    for t in range(int(max_len.max())):
        _check(should_stop)
        at_limit = (t + 1 >= max_len) & ~finished
        if fused:  # each row's best word straight from the logits
            stepped = model.step_logits(prev, state, memory)
            state, extras = stepped.state, stepped.extras
            best, _, prev = fused_step.best_extensions(stepped, no_scores, 1, specials, model.eos_id, at_limit)
            best, prev = best.squeeze(1), prev.squeeze(1)
        else:
            log_probs, state, extras = step(prev, state, memory)
            log_probs = _mask_specials(log_probs, model)
            _force_eos(log_probs, at_limit, model.eos_id)
            best, prev = log_probs.max(dim=-1)
        logprob += best.masked_fill(finished, 0.0)
        lengths += (~finished).long()
        tokens.append(prev)
        if return_attention:  # a copy: a graphed step's outputs are overwritten by the next step
            attn.append(extras["attention"].clone() if graphed else extras["attention"])
        finished |= prev == model.eos_id
        if bool(finished.all()):
            break
    out = torch.stack(tokens, 1).tolist()
    hyps = []
    for b in range(B):
        n = int(lengths[b])
        seq = out[b][: n - 1] if out[b][n - 1] == model.eos_id else out[b][:n]
        hyps.append(SearchHypothesis(seq, float(logprob[b]), float(logprob[b]),
                               torch.stack(attn, 1)[b, :n].cpu() if return_attention else None))
    return hyps


@torch.no_grad()
def beam_search(model: TranslationModel, src: Tensor, src_mask: Tensor, max_len: Tensor,
                beam: int = 5, alpha: float = 0.6, normalize: str = "gnmt", nbest: int = 1,
                return_attention: bool = False,
                should_stop: Optional[Callable[[], bool]] = None,
                coverage: float = 0.0) -> List[List[SearchHypothesis]]:
    """Batched beam search; returns the ``nbest`` best finished hypotheses of each sentence.

    ``max_len[b]`` bounds the output length of sentence b (EOS included): at that step only
    EOS is allowed, so every sentence ends with finished hypotheses. ``should_stop`` is
    checked before every step, as in `greedy_search`. ``coverage`` > 0 adds GNMT's coverage
    penalty with that beta to the finished hypotheses' scores (`rnmt.search.coverage`).

    A step's bookkeeping stays on the device and asks the host one thing (how many
    hypotheses finished and how many sentences are done), plus, on steps where some
    finished, their tokens and scores in one transfer: on a GPU each extra operation or
    transfer costs a kernel launch or a synchronisation, which is what a step's time is made
    of at translation batch sizes (docs/performance.md, "On a GPU").
    """
    B, K, device = src.size(0), beam, src.device
    graphed = step_graphs.applies(src)
    step: Optional[Callable] = step_graphs.GraphedStep(model.step) if graphed else model.step
    if not graphed and fused_step.applies(model, src):
        step = None  # the candidates straight from the logits
    beams = BeamRows.start(model, src, src_mask, max_len, K, coverage)
    limits = beams.max_len.tolist()
    counts = torch.zeros(B, dtype=torch.long, device=device)  # finished hypotheses per sentence
    specials = torch.tensor([model.pad_id, model.bos_id], device=device)
    finished: List[List[SearchHypothesis]] = [[] for _ in range(B)]
    first_rows = first_rows_of(B, K, device)
    top_ranks: Optional[Tensor] = None  # [2K]: True at the K best (a finished hypothesis must rank there)
    t, longest = 0, max(limits)
    while beams.sent_ids:
        _check(should_stop)
        if t >= longest:  # every row must end at its limit: going past it is a bug, never a long input
            raise RuntimeError(f"beam search passed the longest length limit ({longest}) with sentences open")
        b = len(beams.sent_ids)
        at_limit = (t + 1 >= beams.max_len).repeat_interleave(K) if t + 1 >= min(limits) else None
        top_scores, top_beam, top_tok, extras = _step(model, step, beams, specials, at_limit)
        beams.observe(extras, return_attention)
        if top_ranks is None:
            top_ranks = torch.arange(top_scores.size(1), device=device) < K
        is_eos = top_tok == model.eos_id
        finalize = is_eos & top_ranks & torch.isfinite(top_scores)
        cand_rows = first_rows + top_beam  # each candidate's row in the batch
        chosen = _choose(top_scores, cand_rows, top_tok, is_eos, finalize, counts, K)
        if chosen.n_finished:
            _collect_finished(finished, beams, finalize, cand_rows, top_scores,
                              length_penalty(float(t + 1), alpha, normalize))
        beams.advance(chosen.rows, chosen.tokens, chosen.scores)
        if chosen.n_done == b:
            break
        if compaction_due(chosen.n_done, b):
            keep = torch.nonzero(~chosen.done).squeeze(1)
            kept = beams.compact(keep)
            limits, counts = [limits[i] for i in kept], counts[keep]
            first_rows = first_rows_of(len(kept), K, device)
        t += 1
    return n_best(finished, nbest)


def _step(model: TranslationModel, step: Optional[Callable], beams: BeamRows, specials: Tensor,
          at_limit: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor, TensorDict]:
    """One step of `beam_search`: each sentence's 2K best extensions (score, beam, token) and
    the step's extras; ``beams.state`` moves on. ``step`` None: the candidates come straight
    from the logits (`rnmt.search.fused_step`); else from ``step``'s log-probabilities, with
    the special words out and only EOS in the rows ``at_limit``."""
    K = beams.K
    if step is None:
        out = model.step_logits(beams.prev, beams.state, beams.memory)
        beams.state = out.state
        k = min(2 * K, K * out.logits.size(-1))
        return (*fused_step.best_extensions(out, beams.scores, k, specials, model.eos_id, at_limit), out.extras)
    log_probs, beams.state, extras = step(beams.prev, beams.state, beams.memory)
    _mask_specials(log_probs, model)
    if at_limit is not None:
        _force_eos(log_probs, at_limit, model.eos_id)
    return (*best_extensions(beams.scores, log_probs, min(2 * K, K * log_probs.size(-1))), extras)


class _Choice(NamedTuple):
    """What one step of `beam_search` continues with."""

    scores: Tensor  # [b, K]: the continuing hypotheses' scores (-inf throughout a done sentence)
    rows: Tensor  # [b * K]: the row each continues
    tokens: Tensor  # [b, K]: the token it adds
    done: Tensor  # [b]: the sentences with K finished hypotheses, or no live one left
    n_finished: int  # hypotheses that ended this step
    n_done: int  # sentences done


def _choose(top_scores: Tensor, cand_rows: Tensor, top_tok: Tensor, is_eos: Tensor, finalize: Tensor,
            counts: Tensor, K: int) -> _Choice:
    """Each sentence's K best candidates (``[b, 2K]`` each) that did not end go on; the ones
    ``finalize`` marks are added to ``counts`` (in place). The two counts are the step's one
    read by the host."""
    alive_scores, pick = top_scores.masked_fill(is_eos, float("-inf")).topk(K, dim=-1)
    alive_rows = cand_rows.gather(1, pick).view(-1)
    alive_tok = top_tok.gather(1, pick)
    new_finished = finalize.sum(1)
    counts += new_finished
    # topk sorts: a sentence with no finite score left has a non-finite one first.
    done = (counts >= K) | ~torch.isfinite(alive_scores[:, 0])
    n_finished, n_done = torch.stack([new_finished.sum(), done.sum()]).tolist()  # the one sync
    return _Choice(alive_scores.masked_fill(done.unsqueeze(1), float("-inf")), alive_rows, alive_tok, done,
                   n_finished, n_done)


def _collect_finished(finished: List[List[SearchHypothesis]], beams: BeamRows, finalize: Tensor, cand_rows: Tensor,
                      top_scores: Tensor, lp: float) -> None:
    """Add the candidates that end now (``finalize``, [b, 2K]) to their sentences' ``finished``
    (before ``beams`` advance): their tokens, scores and attention in one transfer each."""
    where = finalize.view(-1).nonzero().squeeze(1)
    rows = cand_rows.view(-1).index_select(0, where)
    tokens = beams.history.index_select(0, rows).tolist()
    attn = beams.attn_history.index_select(0, rows).cpu() if beams.attn_history is not None else None
    cp = beams.cover.penalty(rows).tolist() if beams.cover is not None else [0.0] * len(tokens)
    width = top_scores.size(1)
    for i, (cand, logp) in enumerate(zip(where.tolist(), top_scores.view(-1).index_select(0, where).tolist())):
        finished[beams.sent_ids[cand // width]].append(
            SearchHypothesis(tokens[i], logp / lp + cp[i], logp, attn[i] if attn is not None else None))
