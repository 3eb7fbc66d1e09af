"""Terminology constraints: outputs that contain given target phrases, found by a beam search.

The search is the dynamic beam allocation of Post & Vilar (2018, *Fast Lexically Constrained
Decoding with Dynamic Beam Allocation for Neural Machine Translation*, NAACL). Each phrase is
a sequence of target subwords. At every step the candidates are the model's best
extensions, the next subword of every phrase a hypothesis has not produced yet (continuing
a partial match, or starting one), the best single subword of every hypothesis, and the end
of sentence and best extensions of every hypothesis that contains all its phrases. The
candidates are grouped into banks by the number of phrase subwords met, the beam is shared
out among the banks, and the slots of a bank with too few candidates go to the others, so
hypotheses on their way to a phrase are not crowded out by the more probable ones that have
met none.

Inclusion is exact:

- each hypothesis keeps, per phrase, the length of the longest prefix of the phrase that ends
  its output (a Knuth-Morris-Pratt automaton), so overlapping and restarted matches (``a a
  b`` in ``a a a b``) are followed exactly, and phrases that share subwords are tracked
  independently;
- the end of sentence is allowed only once every phrase is met;
- the output length limit is raised so that every phrase and an end of sentence fit, and a
  subword is allowed only if the phrases still unmet fit in the room left after it, so every
  sentence ends with hypotheses that contain all its phrases.

Scores are those of `rnmt.search.beam.beam_search` (log-probability over the length
penalty); finished hypotheses leave the beam as there, and a sentence is done with ``beam``
of them. A sentence without constraints searches as in `beam_search` (tested: the same
outputs, also beside constrained sentences in one batch). The model's work is batched over
sentences and hypotheses; the automata are Python per hypothesis and step (memoised
look-ups), which with the rest costs 1.4 to 2.4 times the plain search's time on the Bible
test (docs/translation.md, "Terminology constraints").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from rnmt.errors import UserError
from rnmt.models.base import TranslationModel
from rnmt.search.beam import (
    BeamRows,
    SearchHypothesis,
    _check,
    _force_eos,
    _mask_specials,
    best_extensions,
    compaction_due,
    length_penalty,
    n_best,
)

State = Tuple[int, ...]  # per phrase: subwords matched so far (its length once met)
NEG_INF = float("-inf")


class Phrase:
    """One constraint's subwords and its KMP automaton (transitions computed on demand)."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = tuple(ids)
        self.fail = _failure(self.ids)
        self._next: Dict[Tuple[int, int], int] = {}

    def advance(self, matched: int, token: int) -> int:
        """The match length after ``token`` when ``matched`` subwords were matched; a met
        phrase (matched == its length) stays met."""
        n = len(self.ids)
        if matched == n:
            return n
        key = (matched, token)
        found = self._next.get(key)
        if found is None:
            q = matched
            while q > 0 and self.ids[q] != token:
                q = self.fail[q - 1]
            found = q + 1 if self.ids[q] == token else 0
            self._next[key] = found
        return found


def _failure(ids: Sequence[int]) -> List[int]:
    """KMP failure function: ``fail[i]`` is the length of the longest proper prefix of
    ``ids[:i + 1]`` that is also its suffix."""
    fail = [0] * len(ids)
    q = 0
    for i in range(1, len(ids)):
        while q > 0 and ids[i] != ids[q]:
            q = fail[q - 1]
        if ids[i] == ids[q]:
            q += 1
        fail[i] = q
    return fail


@dataclass
class SentenceConstraints:
    """The phrases of one sentence and what follows from them for each hypothesis state."""

    phrases: List[Phrase]
    total: int = field(init=False)  # subwords of all phrases: the number of banks minus one
    # memos: a search meets few distinct states, and looks each up many times
    _next: Dict[Tuple[State, int], State] = field(init=False, default_factory=dict)
    _met: Dict[State, bool] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.total = sum(len(p.ids) for p in self.phrases)

    def start(self) -> State:
        return tuple(0 for _ in self.phrases)

    def advance(self, state: State, token: int) -> State:
        key = (state, token)
        found = self._next.get(key)
        if found is None:
            found = self._next[key] = tuple(p.advance(q, token) for p, q in zip(self.phrases, state))
        return found

    def met(self, state: State) -> bool:
        found = self._met.get(state)
        if found is None:
            found = self._met[state] = all(q == len(p.ids) for p, q in zip(self.phrases, state))
        return found

    def needed(self, state: State) -> int:
        """Subwords that suffice to meet every unmet phrase: finish the longest partial
        match, then write each other unmet phrase in full. Writing the next subword of that
        match lowers this by at least one, which is why the room check below never traps a
        hypothesis."""
        unmet = [(len(p.ids), q) for p, q in zip(self.phrases, state) if q < len(p.ids)]
        if not unmet:
            return 0
        return sum(n for n, _ in unmet) - max(q for _, q in unmet)

    def unmet_total(self, state: State) -> int:
        """The most ``needed`` can be after any subword that belongs to no unmet phrase."""
        return sum(len(p.ids) for p, q in zip(self.phrases, state) if q < len(p.ids))

    def phrase_tokens(self, state: State) -> List[int]:
        """Candidate subwords: each unmet phrase's next one and its first one."""
        tokens: List[int] = []
        for p, q in zip(self.phrases, state):
            if q < len(p.ids):
                for t in (p.ids[q], p.ids[0]):
                    if t not in tokens:
                        tokens.append(t)
        return tokens

    def safe_tokens(self, state: State, room: int) -> List[int]:
        """The phrase subwords after which the unmet phrases still fit in ``room`` subwords."""
        every = {t for p, q in zip(self.phrases, state) if q < len(p.ids) for t in p.ids}
        return sorted(t for t in every if self.needed(self.advance(state, t)) <= room)


def encode_constraints(constraints: Optional[Sequence[Sequence[str]]], count: int, encode: Callable[[str], List[int]],
                       unk_id: int, first_line: int = 0) -> Optional[List[List[List[int]]]]:
    """Subword ids of every line's phrases; None without constraints.

    A phrase that is empty after encoding, or that holds a subword the vocabulary does not
    know (the unknown id), is a `UserError` naming its line (``first_line + i + 1``)."""
    if constraints is None:
        return None
    if len(constraints) != count:
        raise UserError(f"{len(constraints)} constraint lists for {count} lines")
    encoded: List[List[List[int]]] = []
    for i, phrases in enumerate(constraints):
        line: List[List[int]] = []
        for k, phrase in enumerate(phrases):
            ids = encode(phrase) if phrase.strip() else []
            where = f"constraint {k + 1} of line {first_line + i + 1}"
            if not ids:
                raise UserError(f"{where} is empty after encoding: {phrase!r}")
            if unk_id in ids:
                raise UserError(f"{where} ({phrase!r}) holds characters the target vocabulary does not know")
            line.append(ids)
        encoded.append(line)
    return encoded


def constraint_lengths(constraints: Sequence[Sequence[Sequence[int]]]) -> List[int]:
    """Subwords of each sentence's phrases together (what the length limit must leave room for)."""
    return [sum(len(p) for p in phrases) for phrases in constraints]


@dataclass
class _Candidate:
    score: float
    beam: int  # hypothesis of the sentence it extends
    token: int
    state: State


@torch.no_grad()
def constrained_beam_search(model: TranslationModel, src: Tensor, src_mask: Tensor, max_len: Tensor,
                            constraints: Sequence[Sequence[Sequence[int]]], beam: int = 5, alpha: float = 0.6,
                            normalize: str = "gnmt", nbest: int = 1, return_attention: bool = False,
                            should_stop: Optional[Callable[[], bool]] = None,
                            coverage: float = 0.0) -> List[List[SearchHypothesis]]:
    """`beam_search` whose outputs contain every phrase of ``constraints[b]`` (subword id
    lists) for sentence b. ``max_len[b]`` is raised to the phrases' length plus one where
    needed (an output must hold them and its end of sentence). ``coverage``: as in
    `beam_search`."""
    K, device, eos = beam, src.device, model.eos_id
    sents = [SentenceConstraints([Phrase(p) for p in phrases]) for phrases in constraints]
    needed = torch.tensor([s.total + 1 for s in sents], dtype=max_len.dtype)
    max_len = torch.maximum(max_len.cpu(), needed)
    limits = max_len.tolist()  # by original sentence index
    beams = BeamRows.start(model, src, src_mask, max_len, K, coverage)
    hyp_states: List[List[State]] = [[s.start()] * K for s in sents]
    finished: List[List[SearchHypothesis]] = [[] for _ in sents]
    t = 0
    while beams.sent_ids:
        _check(should_stop)
        log_probs, beams.state, extras = model.step(beams.prev, beams.state, beams.memory)
        log_probs = _mask_specials(log_probs, model)
        _force_eos(log_probs, (t + 1 >= beams.max_len).repeat_interleave(K), eos)
        beams.observe(extras, return_attention)
        live = torch.isfinite(beams.scores).tolist()
        active = [sents[i] for i in beams.sent_ids]
        # room: the subwords that may still follow this step's before the end of sentence
        _mask_by_constraints(log_probs, active, hyp_states, live, [limits[i] - t - 2 for i in beams.sent_ids], K, eos)
        proposals = _proposals(beams.scores, log_probs, active, hyp_states, live, eos)
        ended, alive = _choose(proposals, active, hyp_states, K, eos)
        _keep_ended(finished, beams, ended, length_penalty(float(t + 1), alpha, normalize))
        hyp_states = _go_on(beams, alive)
        done = [len(finished[i]) >= K or all(c.score == NEG_INF for c in alive[s])
                for s, i in enumerate(beams.sent_ids)]
        if any(done):
            beams.scores[torch.tensor(done, device=device)] = NEG_INF
        if compaction_due(sum(done), len(done)):  # as beam search does
            kept = beams.compact(torch.tensor([s for s, d in enumerate(done) if not d], dtype=torch.long,
                                              device=device))
            hyp_states = [hyp_states[s] for s in kept]
        t += 1
    return n_best(finished, nbest)


def _keep_ended(finished: List[List[SearchHypothesis]], beams: BeamRows, ended: List[Tuple[int, _Candidate]],
                lp: float) -> None:
    """Add the (sentence, candidate) pairs that end now to their sentences' ``finished``
    (before ``beams`` advance), scored as `beam_search` scores them."""
    ended_rows = [s * beams.K + c.beam for s, c in ended]
    cp = (beams.cover.penalty(torch.tensor(ended_rows, dtype=torch.long, device=beams.prev.device)).tolist()
          if beams.cover is not None and ended else [0.0] * len(ended))
    for (s, c), row, penalty in zip(ended, ended_rows, cp):
        hyp_attn = beams.attn_history[row].cpu() if beams.attn_history is not None else None
        finished[beams.sent_ids[s]].append(SearchHypothesis(beams.history[row].tolist(), c.score / lp + penalty,
                                                            c.score, hyp_attn))


def _go_on(beams: BeamRows, alive: List[List[_Candidate]]) -> List[List[State]]:
    """Advance ``beams`` to each sentence's ``K`` chosen candidates; returns their automaton states."""
    device, K = beams.prev.device, beams.K
    beam_idx = torch.tensor([[c.beam for c in cs] for cs in alive], dtype=torch.long, device=device)
    tokens = torch.tensor([[c.token for c in cs] for cs in alive], dtype=torch.long, device=device).view(-1)
    rows = (torch.arange(len(alive), device=device).unsqueeze(1) * K + beam_idx).view(-1)
    scores = torch.tensor([[c.score for c in cs] for cs in alive], dtype=beams.scores.dtype, device=device)
    beams.advance(rows, tokens, scores)
    return [[c.state for c in cs] for cs in alive]


def _proposals(scores: Tensor, log_probs: Tensor, sents: List[SentenceConstraints], hyp_states: List[List[State]],
               live: List[List[bool]], eos: int) -> List[Dict[Tuple[int, int], float]]:
    """Each sentence's candidates, ``{(hypothesis, subword): log-probability}``: the beam's
    ``2K`` best extensions, each hypothesis's best subword, and `_extra_candidates`."""
    b, K = scores.shape
    V = log_probs.size(-1)
    device = log_probs.device
    top_scores, top_beam, top_tok = (x.tolist() for x in best_extensions(scores, log_probs, min(2 * K, K * V)))
    best_lp, best_tok = (x.tolist() for x in log_probs.max(dim=-1))
    extra, complete = _extra_candidates(sents, hyp_states, live, K, eos)
    if complete:  # the hypotheses that met every phrase compete as in beam search: their 2K best
        rows = torch.tensor(complete, dtype=torch.long, device=device)
        best_of_complete = log_probs.index_select(0, rows).topk(min(2 * K, V), dim=-1).indices.tolist()
        extra += [(r, w) for r, words in zip(complete, best_of_complete) for w in words]
    extra_lp = (log_probs[torch.tensor([r for r, _ in extra], dtype=torch.long, device=device),
                          torch.tensor([w for _, w in extra], dtype=torch.long, device=device)].tolist()
                if extra else [])
    beam_scores = scores.tolist()
    proposals: List[Dict[Tuple[int, int], float]] = [{} for _ in range(b)]
    for s in range(b):
        for score, k, w in zip(top_scores[s], top_beam[s], top_tok[s]):
            proposals[s][(k, w)] = score
        for k in range(K):
            if live[s][k]:
                proposals[s][(k, best_tok[s * K + k])] = beam_scores[s][k] + best_lp[s * K + k]
    for (row, w), lp in zip(extra, extra_lp):
        s, k = divmod(row, K)
        proposals[s][(k, w)] = beam_scores[s][k] + lp
    return proposals


def _mask_by_constraints(log_probs: Tensor, sents: List[SentenceConstraints], hyp_states: List[List[State]],
                         live: List[List[bool]], rooms: List[int], K: int, eos: int) -> None:
    """No end of sentence before every phrase is met; where the room after this step is
    short, only the phrase subwords after which the unmet phrases still fit."""
    no_eos: List[int] = []
    for s, sc in enumerate(sents):
        if not sc.phrases:
            continue
        for k in range(K):
            if not live[s][k]:
                continue
            st, row = hyp_states[s][k], s * K + k
            if not sc.met(st):
                no_eos.append(row)
            if not sc.met(st) and sc.unmet_total(st) > rooms[s]:  # any subword might leave too little room
                allowed = torch.tensor(sc.safe_tokens(st, rooms[s]), dtype=torch.long, device=log_probs.device)
                keep = log_probs[row, allowed]
                log_probs[row] = NEG_INF
                log_probs[row, allowed] = keep
    if no_eos:
        log_probs[torch.tensor(no_eos, dtype=torch.long, device=log_probs.device), eos] = NEG_INF


def _extra_candidates(sents: List[SentenceConstraints], hyp_states: List[List[State]], live: List[List[bool]],
                      K: int, eos: int) -> Tuple[List[Tuple[int, int]], List[int]]:
    """(row, subword) pairs beyond the best extensions of the whole beam, and the rows that
    met every phrase. A hypothesis with unmet phrases proposes their subwords; one that met
    all proposes its end of sentence (the caller adds its best subwords, so that its end
    competes with its own continuations, not only with the few that reached its bank)."""
    pairs: List[Tuple[int, int]] = []
    complete: List[int] = []
    for s, sc in enumerate(sents):
        if not sc.phrases:
            continue
        for k in range(K):
            if live[s][k]:
                st = hyp_states[s][k]
                if sc.met(st):
                    complete.append(s * K + k)
                    pairs.append((s * K + k, eos))
                else:
                    pairs.extend((s * K + k, w) for w in sc.phrase_tokens(st))
    return pairs, complete


def _choose(proposals: List[Dict[Tuple[int, int], float]], sents: List[SentenceConstraints],
            hyp_states: List[List[State]], K: int, eos: int) -> Tuple[List[Tuple[int, _Candidate]],
                                                                      List[List[_Candidate]]]:
    """The (sentence, candidate) pairs that end now, and each sentence's ``K`` hypotheses to
    continue (filled up with dead ones, score -inf, where there are fewer candidates)."""
    ended: List[Tuple[int, _Candidate]] = []
    alive: List[List[_Candidate]] = []
    for s, sc in enumerate(sents):
        if sc.phrases:
            cands = [_Candidate(v, k, w, hyp_states[s][k] if w == eos else sc.advance(hyp_states[s][k], w))
                     for (k, w), v in proposals[s].items() if v != NEG_INF]
        else:
            cands = [_Candidate(v, k, w, ()) for (k, w), v in proposals[s].items() if v != NEG_INF]
        done, kept = _finish_and_allocate(cands, sc, K, eos)
        ended += [(s, c) for c in done]
        alive.append(kept + [_Candidate(NEG_INF, 0, eos, sc.start())] * (K - len(kept)))
    return ended, alive


def _finish_and_allocate(cands: List[_Candidate], sc: SentenceConstraints, K: int,
                         eos: int) -> Tuple[List[_Candidate], List[_Candidate]]:
    """Split one sentence's candidates into the hypotheses that end now and the (at most
    ``K``) that continue, chosen bank by bank (Post & Vilar 2018, section 3).

    An end of sentence is taken when it ranks among the ``K`` best candidates of the top
    bank (every phrase met; it holds the ``2K`` best extensions of each of its hypotheses),
    as `beam_search` takes one among the ``K`` best of all (without constraints there is one
    bank and the two rules agree)."""
    cands.sort(key=lambda c: -c.score)
    if sc.total == 0:  # one bank: beam search's own rule
        return ([c for c in cands[:K] if c.token == eos], [c for c in cands if c.token != eos][:K])
    banks: List[List[_Candidate]] = [[] for _ in range(sc.total + 1)]
    for c in cands:
        banks[sum(c.state)].append(c)
    ended = [c for rank, c in enumerate(banks[-1]) if c.token == eos and rank < K]
    for bank in banks:
        bank[:] = [c for c in bank if c.token != eos]
    # Equal shares, the remainder to the banks with the most met; then the slots a bank
    # cannot fill go, one at a time, to the highest banks that still have candidates.
    n = len(banks)
    share = [K // n + (1 if i >= n - K % n else 0) for i in range(n)]
    taken = [min(share[i], len(banks[i])) for i in range(n)]
    spare = K - sum(taken)
    while spare > 0:
        grew = False
        for i in reversed(range(n)):
            if spare > 0 and taken[i] < len(banks[i]):
                taken[i] += 1
                spare -= 1
                grew = True
        if not grew:
            break
    alive = [c for i in range(n) for c in banks[i][:taken[i]]]
    alive.sort(key=lambda c: -c.score)
    return ended, alive
