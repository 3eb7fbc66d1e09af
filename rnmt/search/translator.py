"""Text in, text out: subword encoding, length-sorted batches, search, decoding.

Empty or whitespace-only input lines are never sent to the model; they come back as
empty translations so that line i of the output always belongs to line i of the input.
A line longer than ``max_input`` subwords is translated in pieces joined into one
translation (`rnmt.search.limits`). Lines with terminology constraints are searched by
`rnmt.search.constraints` (beam search with dynamic beam allocation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import zip_longest
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import Tensor

from rnmt.config import SearchConfig
from rnmt.data import Vocab, make_translation_batches, restore_order
from rnmt.errors import UserError
from rnmt.models.base import TranslationModel
from rnmt.search.beam import SearchHypothesis, beam_search, greedy_search
from rnmt.search.constraints import constrained_beam_search, constraint_lengths, encode_constraints
from rnmt.search.limits import ends_sentence, output_limits, search_rows, sentences_per_batch, split_source
from rnmt.search.min_length import with_min_length
from rnmt.search.prefix import encode_prefixes, restore_prefix, with_prefixes
from rnmt.search.repeats import with_repeats_blocked
from rnmt.search.sampling import Sampling, sample_search
from rnmt.search.shortlist import Shortlist, ShortlistModel, batch_rows


def check_output_room(prefixes: Optional[Sequence[Sequence[int]]],
                      constraints: Optional[Sequence[Sequence[Sequence[int]]]], max_output: int,
                      first_line: int = 0) -> None:
    """Every line's prefix, and its constraints together, fit in an output of ``max_output``
    subwords with its end of sentence; else a `UserError` naming the line (a longer prefix
    came out whole past the cap, and a search for more constrained subwords than the output
    can hold ran without end)."""
    per_line = zip_longest([len(p) for p in prefixes or []], constraint_lengths(constraints or []), fillvalue=0)
    for i, (prefix, phrases) in enumerate(per_line):
        used = prefix + phrases  # the constrained search makes room for both (Translator._search)
        if used >= max_output:
            what = "prefix and constraints" if prefix and phrases else "prefix" if prefix else "constraints"
            raise UserError(f"line {first_line + i + 1}: its {what} take {used:,} target subwords; an output "
                            f"holds at most {max_output - 1:,} before its end of sentence (--max-output-tokens)")


def check_width(width: int, vocab_size: int, sampling: bool) -> None:
    """A sentence's hypotheses (``width``: its beam, n-best or samples) fit in one search
    batch (`rnmt.search.limits.search_rows` over this target vocabulary); else a `UserError`
    before any search. Batches hold fewer sentences for a wider beam, but one sentence
    cannot be split."""
    most = search_rows(vocab_size)
    if width > most:
        what = "samples (nbest)" if sampling else "hypotheses (beam, nbest)"
        raise UserError(f"{width:,} {what} per sentence; a search holds at most {most:,} over this model's target "
                        f"vocabulary of {vocab_size:,} (rnmt.search.limits)")


@dataclass
class Translation:
    text: str
    score: float
    tokens: List[int]
    src_pieces: List[str]
    tgt_pieces: List[str]
    attention: Optional[torch.Tensor] = None  # [len(tgt_pieces) + 1, len(src_pieces) + 1] (EOS rows/cols)
    token_log_probs: Optional[List[float]] = None  # per target piece and </s>, from `add_token_scores`
    log_prob: float = 0.0  # the model's log-probability of the output, </s> included (a split line's: the sum)


@dataclass
class _Segments:
    """What the model translates for one call: the non-blank lines whole, or in pieces when
    long, with each segment's share of its line's prefix and constraints (its first piece
    takes them)."""

    todo: List[int]  # the lines not blank
    ids: List[List[int]]  # each segment's source subwords
    owners: List[int]  # the position in ``todo`` of each segment's line
    prefix_ids: Optional[List[List[int]]] = None
    prefix_text: Optional[List[str]] = None
    constraint_ids: Optional[List[List[List[int]]]] = None

    def on_first_pieces(self, per_line: Optional[Sequence], empty: Callable[[], Any]) -> Optional[list]:
        """Per segment: its line's value on the line's first piece, ``empty()`` on the others."""
        if per_line is None:
            return None
        first_piece = [k == 0 or self.owners[k - 1] != self.owners[k] for k in range(len(self.owners))]
        return [per_line[self.todo[k]] if first else empty() for k, first in zip(self.owners, first_piece)]

    def per_line(self, n_lines: int, per_segment: List[List[Translation]]) -> List[List[Translation]]:
        """Each of ``n_lines`` lines' translations: a blank line's one empty translation, a
        whole line's own, a split line's pieces joined (`_join`)."""
        results: List[List[Translation]] = [[Translation("", 0.0, [], [], [])] for _ in range(n_lines)]
        grouped: List[List[List[Translation]]] = [[] for _ in self.todo]
        for k, translations in zip(self.owners, per_segment):
            grouped[k].append(translations)
        for i, parts in zip(self.todo, grouped):
            results[i] = parts[0] if len(parts) == 1 else _join(parts)
        return results


class Translator:
    def __init__(self, model: TranslationModel, src_vocab: Vocab, tgt_vocab: Vocab,
                 search: SearchConfig | None = None, device: str | torch.device = "cpu") -> None:
        self.model = model
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.search = search or SearchConfig()
        self.device = torch.device(device)
        # the searches' candidate words per batch (`rnmt.search.shortlist`); None: the whole vocabulary
        self.shortlist: Optional[Shortlist] = None
        self._word_starts: Optional[np.ndarray] = None
        self._sentence_ends: Optional[np.ndarray] = None

    def translate(self, lines: Sequence[str], greedy: bool = False, return_attention: bool = False,
                  max_output: Optional[int] = None, should_stop: Optional[Callable[[], bool]] = None,
                  max_input: Optional[int] = None, on_split: Optional[Callable[[int, int, int], None]] = None,
                  sampling: Optional[Sampling] = None, prefixes: Optional[Sequence[str]] = None,
                  first_line: int = 0, constraints: Optional[Sequence[Sequence[str]]] = None,
                  mbr: Optional[str] = None, **overrides) -> List[List[Translation]]:
        """N-best translations of every line (one empty translation for a blank line).

        ``overrides`` replace fields of the search config (beam, alpha, nbest, ...).
        ``max_output`` caps every output length (EOS included) whatever the source length
        (`rnmt.search.limits.output_limits`); ``should_stop`` is passed to the search (it
        raises `SearchStopped` when it fires). A line of more than ``max_input`` subwords
        (EOS included) is translated in pieces; ``on_split(index, subwords, pieces)`` is
        called for it first. Its k-th hypothesis joins the pieces' k-th ones (or their
        last) with a space, its score is their mean, and it has no attention matrix.
        ``sampling`` draws ``nbest`` samples per line instead of searching; line i's draws
        are keyed by ``first_line + i`` (`rnmt.search.sampling`; the pieces of a split line
        share its key). ``prefixes`` (one per line, empty for none) start the outputs
        (`rnmt.search.prefix`; a split line's prefix starts its first piece). ``constraints``
        (one list of target phrases per line, empty for none) must each appear in the
        line's outputs (`rnmt.search.constraints`; a split line's constraints go to its first
        piece); greedy search with constraints is the constrained search with a beam of one,
        and sampling does not take constraints (a `UserError`). ``mbr`` (a utility of
        `rnmt.search.mbr.UTILITIES`) keeps, of each line's ``nbest`` candidates, the one of
        highest expected utility against the others (`rnmt.search.mbr.choose`).
        """
        opts = replace(self.search, **{k: v for k, v in overrides.items() if v is not None})
        # the hypotheses a sentence holds: its samples, one (greedy) or the beam
        width = opts.nbest if sampling is not None else 1 if greedy else max(opts.beam, opts.nbest)
        check_width(width, len(self.tgt_vocab), sampling is not None)
        if constraints is not None and sampling is not None:
            raise UserError("constraints need a search: they do not combine with sampling")
        line_constraint_ids = encode_constraints(constraints, len(lines), self.tgt_vocab.encode,
                                                 self.tgt_vocab.unk_id, first_line)
        was_training = self.model.training
        self.model.eval()
        todo = [i for i, line in enumerate(lines) if line.strip()]
        segs = _Segments(todo, *self._segments(lines, todo, max_input, on_split))
        line_prefix_ids = encode_prefixes(prefixes, len(lines), self.tgt_vocab.encode)
        if max_output is not None:
            check_output_room(line_prefix_ids, line_constraint_ids, max_output, first_line)
        segs.prefix_ids = segs.on_first_pieces(line_prefix_ids, list)
        segs.prefix_text = segs.on_first_pieces(prefixes, str)
        segs.constraint_ids = segs.on_first_pieces(line_constraint_ids, list)

        def search(src: Tensor, mask: Tensor, keys: List[int], batch_prefixes: Optional[List[List[int]]],
                   batch_constraints: List[List[List[int]]]) -> List[List[SearchHypothesis]]:
            return self._search(opts, src, mask, greedy, return_attention, max_output, should_stop, sampling, keys,
                                batch_prefixes, batch_constraints)

        try:
            per_segment = self._translate_segments(segs, search, opts.batch_tokens, width, first_line)
        finally:
            self.model.train(was_training)
        results = segs.per_line(len(lines), per_segment)
        return results if mbr is None else [_by_mbr(hyps, sampling is not None, mbr) for hyps in results]

    def _translate_segments(self, segs: _Segments, search: Callable[..., List[List[SearchHypothesis]]],
                            batch_tokens: int, width: int, first_line: int) -> List[List[Translation]]:
        """Every segment's n-best translations, searched in length-sorted batches of at most
        ``batch_tokens`` source subwords (and as many sentences as ``width`` hypotheses each
        allow); sampling draws are keyed by ``first_line`` plus the line's index."""
        batch_indices, batch_results = [], []
        per_batch = sentences_per_batch(width, len(self.tgt_vocab))
        for idx, src, mask in make_translation_batches(segs.ids, batch_tokens, max_sentences=per_batch):
            src, mask = src.to(self.device), mask.to(self.device)
            batch_prefixes = None if segs.prefix_ids is None else [segs.prefix_ids[i] for i in idx]
            batch_constraints = [] if segs.constraint_ids is None else [segs.constraint_ids[i] for i in idx]
            keys = [first_line + segs.todo[segs.owners[i]] for i in idx]
            nbest = search(src, mask, keys, batch_prefixes, batch_constraints)
            batch_indices.append(idx)
            batch_results.append([[self._finish(h, segs.ids[i], segs.prefix_text[i] if segs.prefix_text else None,
                                                segs.prefix_ids[i] if segs.prefix_ids else None) for h in hyps]
                                  for i, hyps in zip(idx, nbest)])
        return restore_order(batch_indices, batch_results) if segs.ids else []

    def _segments(self, lines: Sequence[str], todo: List[int], max_input: Optional[int],
                  on_split: Optional[Callable[[int, int, int], None]]) -> Tuple[List[List[int]], List[int]]:
        """(what the model translates: whole lines and the pieces of long ones, the position in
        ``todo`` of each segment's line)."""
        segments: List[List[int]] = []
        owners: List[int] = []
        for k, i in enumerate(todo):
            ids = self.src_vocab.encode(lines[i])
            pieces = [ids] if max_input is None or len(ids) + 1 <= max_input else self._split(ids, max_input - 1)
            if len(pieces) > 1 and on_split is not None:
                on_split(i, len(ids) + 1, len(pieces))
            segments.extend(pieces)
            owners.extend([k] * len(pieces))
        return segments, owners

    def _search(self, opts: SearchConfig, src: Tensor, mask: Tensor, greedy: bool, return_attention: bool,
                max_output: Optional[int], should_stop: Optional[Callable[[], bool]], sampling: Optional[Sampling],
                keys: List[int], prefix_ids: Optional[List[List[int]]],
                constraints: List[List[List[int]]]) -> List[List[SearchHypothesis]]:
        """One batch's n-best hypotheses by the search the options choose: constrained beam
        search when a segment has constraints, sampling (draws keyed by ``keys``), greedy, or
        beam search; the model cut to the batch's shortlist when one is set (not for sampling),
        and wrapped for prefixes, a minimum length and blocked repeats."""
        max_len = output_limits(mask.sum(1), opts.max_len_ratio, opts.max_len_offset, max_output)
        model: TranslationModel = self.model
        shortlisted = None
        if self.shortlist is not None and sampling is None:  # sampling draws from the whole vocabulary
            shortlisted, prefix_ids, constraints = self._shortlisted(src, prefix_ids, constraints)
            model = shortlisted
        hyps = self._run_search(model, opts, src, mask, max_len, greedy, return_attention, should_stop, sampling,
                                keys, prefix_ids, constraints)
        if shortlisted is not None:
            for nbest in hyps:
                for h in nbest:
                    h.tokens = shortlisted.to_vocabulary(h.tokens)
        return hyps

    def _shortlisted(self, src: Tensor, prefix_ids: Optional[List[List[int]]], constraints: List[List[List[int]]]
                     ) -> Tuple[ShortlistModel, Optional[List[List[int]]], List[List[List[int]]]]:
        """The model over this batch's shortlist (its prefixes' and constraints' subwords
        included), with the prefixes and constraints in the shortlist's ids."""
        assert self.shortlist is not None
        forced = [t for p in prefix_ids or [] for t in p] + [t for c in constraints for phrase in c for t in phrase]
        model = ShortlistModel(self.model, batch_rows(self.shortlist, src, forced), len(self.tgt_vocab))
        if prefix_ids is not None:
            prefix_ids = [model.to_shortlist(p) for p in prefix_ids]
        constraints = [[model.to_shortlist(phrase) for phrase in c] for c in constraints]
        return model, prefix_ids, constraints

    def _run_search(self, model: TranslationModel, opts: SearchConfig, src: Tensor, mask: Tensor, max_len: Tensor,
                    greedy: bool, return_attention: bool, should_stop: Optional[Callable[[], bool]],
                    sampling: Optional[Sampling], keys: List[int], prefix_ids: Optional[List[List[int]]],
                    constraints: List[List[List[int]]]) -> List[List[SearchHypothesis]]:
        if prefix_ids is not None:
            model, max_len = with_prefixes(model, prefix_ids, max_len, self.device)
        constrained = any(constraints)
        if constrained:
            # room for the prefix, every phrase and the end of sentence
            prefix_len = [len(p) for p in prefix_ids] if prefix_ids else [0] * len(constraints)
            room = torch.tensor([p + c + 1 for p, c in zip(prefix_len, constraint_lengths(constraints))],
                                dtype=max_len.dtype, device=max_len.device)
            max_len = torch.maximum(max_len, room)
        model = with_min_length(model, opts.min_output_tokens, max_len)
        model = with_repeats_blocked(model, opts.no_repeat_ngram, max_len)
        if constrained:
            return constrained_beam_search(model, src, mask, max_len, constraints,
                                           beam=1 if greedy else max(opts.beam, opts.nbest),
                                           alpha=opts.alpha, normalize=opts.normalize,
                                           nbest=1 if greedy else opts.nbest,
                                           return_attention=return_attention, should_stop=should_stop,
                                           coverage=opts.coverage)
        if sampling is not None:
            return sample_search(model, src, mask, max_len, sampling, keys, n=opts.nbest, alpha=opts.alpha,
                                 normalize=opts.normalize, return_attention=return_attention,
                                 should_stop=should_stop)
        if greedy or opts.beam <= 1 and opts.nbest <= 1:
            return [[h] for h in greedy_search(model, src, mask, max_len, return_attention, should_stop=should_stop)]
        return beam_search(model, src, mask, max_len, beam=max(opts.beam, opts.nbest), alpha=opts.alpha,
                           normalize=opts.normalize, nbest=opts.nbest, return_attention=return_attention,
                           should_stop=should_stop, coverage=opts.coverage)

    def _split(self, ids: List[int], size: int) -> List[List[int]]:
        if self._word_starts is None or self._sentence_ends is None:  # per piece, once, on the first long line
            pieces = self.src_vocab.pieces
            self._word_starts = np.array([p.startswith("\u2581") for p in pieces])
            self._sentence_ends = np.array([ends_sentence(p) for p in pieces])
        starts, ends = self._word_starts, self._sentence_ends
        return split_source(ids, max(size, 1), lambda t: bool(starts[t]), lambda t: bool(ends[t]))

    def translate_best(self, lines: Sequence[str], **kwargs) -> List[str]:
        return [nbest[0].text for nbest in self.translate(lines, **kwargs)]

    def add_token_scores(self, lines: Sequence[str], results: List[List[Translation]],
                         batch_tokens: Optional[int] = None) -> None:
        """Fill in ``token_log_probs`` of every non-blank translation by forced decoding of
        its own subwords (the log-probabilities the search saw, prefix and EOS included), in
        one teacher-forced pass per batch (`forced_log_probs`)."""
        from rnmt.search.forced import forced_log_probs

        pairs = [(k, t) for k, hyps in enumerate(results) if lines[k].strip() for t in hyps]
        if not pairs:
            return
        src = [self.src_vocab.encode(lines[k]) for k, _ in pairs]
        decoded = forced_log_probs(self.model, src, [t.tokens for _, t in pairs],
                                   batch_tokens or self.search.batch_tokens, self.device)
        for (_, t), log_probs in zip(pairs, decoded):
            t.token_log_probs = [float(x) for x in log_probs]

    def _finish(self, hyp: SearchHypothesis, src_ids: List[int], prefix: Optional[str] = None,
                prefix_ids: Optional[List[int]] = None) -> Translation:
        attention = None
        if hyp.attention is not None:
            attention = hyp.attention[:, : len(src_ids) + 1]
        text = self.tgt_vocab.decode(hyp.tokens)
        if prefix_ids:
            text = restore_prefix(text, self.tgt_vocab.decode(prefix_ids), prefix or "")
        return Translation(
            text=text,
            score=hyp.score,
            log_prob=hyp.logprob,
            tokens=hyp.tokens,
            src_pieces=[self.src_vocab.id_to_piece(i) for i in src_ids],
            tgt_pieces=[self.tgt_vocab.id_to_piece(i) for i in hyp.tokens],
            attention=attention,
        )


def _join(parts: List[List[Translation]]) -> List[Translation]:
    """One n-best list from the n-best lists of a line's pieces, in order."""
    joined = []
    for k in range(max(len(p) for p in parts)):
        chosen = [p[min(k, len(p) - 1)] for p in parts]
        joined.append(Translation(
            text=" ".join(t.text for t in chosen if t.text),
            score=sum(t.score for t in chosen) / len(chosen),
            log_prob=sum(t.log_prob for t in chosen),
            tokens=[tok for t in chosen for tok in t.tokens],
            src_pieces=[p for t in chosen for p in t.src_pieces],
            tgt_pieces=[p for t in chosen for p in t.tgt_pieces],
        ))
    return joined


def _by_mbr(hyps: List[Translation], sampled: bool, utility: str) -> List[Translation]:
    """The one translation minimum Bayes risk chooses among ``hyps`` (one, as a blank line's
    empty translation, is its own choice)."""
    from rnmt.search.mbr import choose

    if len(hyps) == 1:
        return hyps
    best, _ = choose([h.text for h in hyps], [h.log_prob for h in hyps], sampled, utility)
    return [hyps[best]]
