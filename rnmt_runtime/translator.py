"""Text in, n-best translations out, over an export directory: what ``rnmt translate`` does
(`rnmt.search.translator`), with the search in numpy and the model in onnxruntime.

Blank lines are never sent to the model (they come back empty); every other line is
encoded with the source vocabulary, cut into pieces when longer than ``max_input_tokens``
subwords, sorted by length into batches of at most ``batch_tokens`` source tokens, searched,
and its pieces' translations joined back into one line.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from rnmt_runtime.errors import ExportError
from rnmt_runtime.forcing import with_min_length, with_prefixes, with_repeats_blocked
from rnmt_runtime.graphs import ExportedModel
from rnmt_runtime.limits import (
    BATCH_TOKENS,
    default_input_limit,
    ends_sentence,
    output_limits,
    search_rows,
    sentences_per_batch,
    split_source,
    token_batches,
)
from rnmt_runtime.manifest import Manifest, load_manifest
from rnmt_runtime.sampling import Sampling, sample_search
from rnmt_runtime.search import Hypothesis, beam_search, greedy_search
from rnmt_runtime.shortlist import DEFAULT_BEST, DEFAULT_FREQUENT, Shortlist, ShortlistedModel
from rnmt_runtime.vocab import Vocab


@dataclass(frozen=True)
class Options:
    """One call's search options; None: the export's recorded default (`SearchDefaults`)."""

    beam: Optional[int] = None
    greedy: bool = False
    alpha: Optional[float] = None
    normalize: Optional[str] = None
    nbest: int = 1
    max_len_ratio: Optional[float] = None
    batch_tokens: Optional[int] = None
    max_output_tokens: Optional[int] = None
    max_input_tokens: Optional[int] = None
    min_output_tokens: Optional[int] = None
    no_repeat_ngram: Optional[int] = None  # N: no output repeats N subwords (0: off)
    coverage: Optional[float] = None  # GNMT's coverage penalty beta on beam search's finished hypotheses (0: off)
    sampling: Optional[Sampling] = None
    prefixes: Optional[Sequence[str]] = None  # one per line ("" for none)
    line_offset: int = 0  # the first line's key for sampling (a text in chunks samples as in one call)
    return_attention: bool = False
    on_split: Optional[Callable[[int, int, int], None]] = field(default=None, compare=False)
    should_stop: Optional[Callable[[], bool]] = field(default=None, compare=False)


@dataclass
class Translation:
    text: str
    score: float
    tokens: List[int]
    src_pieces: List[str]
    tgt_pieces: List[str]
    attention: Optional[np.ndarray] = None  # [len(tgt_pieces) + 1, len(src_pieces) + 1]


@dataclass
class _Plan:
    """An `Options` with every default filled in from the export."""

    beam: int
    greedy: bool
    alpha: float
    normalize: str
    nbest: int
    ratio: float
    offset: int
    batch_tokens: int
    max_output: int
    max_input: int
    min_output: int
    no_repeat: int
    coverage: float


class Translator:
    """An export directory loaded for translation: `translate` takes lines and `Options`."""

    def __init__(self, directory: str | os.PathLike, threads: Optional[int] = None, parallel_batches: int = 1) -> None:
        """``threads``: onnxruntime's threads within one graph call (its default: all cores);
        ``parallel_batches``: how many batches are searched at once, each on its own thread
        (`translate`). Beam search over a recurrent decoder makes many small calls, which
        one thread each runs better than several threads share: at ``parallel_batches=2``
        with one thread each, two cores translate 1.9x one core's sentences/s, where one
        call on two threads gains 1.2-1.45x (docs/deploy.md, "Measured")."""
        self.manifest: Manifest = load_manifest(directory)
        self.src_vocab = Vocab(self.manifest.src_vocab, self.manifest.special_ids)
        self.tgt_vocab = (self.src_vocab if self.manifest.tgt_vocab == self.manifest.src_vocab
                          else Vocab(self.manifest.tgt_vocab, self.manifest.special_ids))
        self.model = ExportedModel(self.manifest, threads)
        self.parallel_batches = max(1, parallel_batches)
        self.shortlist: Optional[Shortlist] = None  # the searches' candidate words (`use_shortlist`)
        self._word_starts: Optional[np.ndarray] = None
        self._sentence_ends: Optional[np.ndarray] = None

    def use_shortlist(self, path: Optional[str | os.PathLike], frequent: int = DEFAULT_FREQUENT,
                      best: int = DEFAULT_BEST) -> None:
        """Search every batch over a lexical shortlist from now on (`rnmt_runtime.shortlist`;
        ``rnmt shortlist`` writes the file); ``None``: the whole vocabulary again. An export
        written before shortlists, or a file of other vocabularies, is an `ExportError`."""
        if path is None:
            self.shortlist = None
            return
        shortlist = Shortlist.load(path, self.src_vocab, self.tgt_vocab).with_sizes(frequent, best)
        self.model.open_readout()  # now, not in searches running side by side
        weight, _ = self.model.output_layer()
        if weight.shape[0] != len(self.tgt_vocab):
            raise ExportError(f"{self.manifest.output_layer['weight']}: the output layer has {weight.shape[0]:,} rows "
                              f"for a target vocabulary of {len(self.tgt_vocab):,}")
        self.shortlist = shortlist

    @property
    def defaults(self):
        return self.manifest.search

    def plan(self, options: Options) -> _Plan:
        """The options with the export's defaults filled in, checked together."""
        d = self.defaults
        cap = options.max_output_tokens or d.max_output_tokens
        ratio = d.max_len_ratio if options.max_len_ratio is None else options.max_len_ratio
        plan = _Plan(beam=d.beam if options.beam is None else options.beam, greedy=options.greedy,
                     alpha=d.alpha if options.alpha is None else options.alpha,
                     normalize=options.normalize or d.normalize, nbest=options.nbest, ratio=ratio,
                     offset=d.max_len_offset, max_output=cap,
                     batch_tokens=options.batch_tokens or min(d.batch_tokens, BATCH_TOKENS),
                     max_input=options.max_input_tokens or d.max_input_tokens
                     or default_input_limit(ratio, d.max_len_offset, cap),
                     min_output=d.min_output_tokens if options.min_output_tokens is None
                     else options.min_output_tokens,
                     no_repeat=d.no_repeat_ngram if options.no_repeat_ngram is None else options.no_repeat_ngram,
                     coverage=d.coverage if options.coverage is None else options.coverage)
        if plan.greedy and plan.nbest > 1:
            raise ExportError(f"--nbest {plan.nbest} needs beam search: --greedy gives one hypothesis")
        if plan.coverage and not self.model.reports_attention:
            raise ExportError(f"coverage {plan.coverage:g}: the coverage penalty needs attention weights, and this "
                              f"model reports none (--coverage 0 turns it off)")
        if plan.min_output >= plan.max_output:
            raise ExportError(f"--min-output-tokens ({plan.min_output}) must be below --max-output-tokens "
                              f"({plan.max_output}), which counts the end of sentence")
        width = plan.nbest if options.sampling else 1 if plan.greedy else max(plan.beam, plan.nbest)
        if width > search_rows(len(self.tgt_vocab)):
            raise ExportError(f"{width:,} hypotheses per sentence; a search holds at most "
                              f"{search_rows(len(self.tgt_vocab)):,} over this model's target vocabulary")
        return plan

    def translate(self, lines: Sequence[str], options: Options = Options()) -> List[List[Translation]]:
        """The n-best translations of every line (one empty translation for a blank line)."""
        plan = self.plan(options)
        results: List[List[Translation]] = [[Translation("", 0.0, [], [], [])] for _ in lines]
        todo = [i for i, line in enumerate(lines) if line.strip()]
        segments, owners = self._segments(lines, todo, plan.max_input, options.on_split)
        first = [k == 0 or owners[k - 1] != owners[k] for k in range(len(owners))]
        prefixes = self._prefix_ids(options.prefixes, lines, plan.max_output)
        seg_prefix = [prefixes[todo[k]] if prefixes and f else [] for k, f in zip(owners, first)]
        seg_prefix_text = [options.prefixes[todo[k]] if options.prefixes and f else "" for k, f in zip(owners, first)]
        width = plan.nbest if options.sampling else 1 if plan.greedy else max(plan.beam, plan.nbest)
        per_segment: List[Any] = [None] * len(segments)
        per_batch = sentences_per_batch(width, len(self.tgt_vocab))

        def search_batch(batch: Tuple[List[int], np.ndarray, np.ndarray]) -> List[Tuple[int, List[Translation]]]:
            idx, src, mask = batch
            keys = [options.line_offset + todo[owners[i]] for i in idx]
            nbest = self._search(plan, options, src, mask, [seg_prefix[i] for i in idx], keys)
            return [(i, [self._finish(h, segments[i], seg_prefix_text[i], seg_prefix[i]) for h in hyps])
                    for i, hyps in zip(idx, nbest)]

        batches = token_batches(segments, plan.batch_tokens, per_batch, self.model.eos_id, self.model.pad_id)
        for done in self._each(search_batch, list(batches)):
            for i, translations in done:
                per_segment[i] = translations
        grouped: List[List[List[Translation]]] = [[] for _ in todo]
        for k, translations in zip(owners, per_segment):
            grouped[k].append(translations)
        for i, parts in zip(todo, grouped):
            results[i] = parts[0] if len(parts) == 1 else join_pieces(parts)
        return results

    def _each(self, work: Callable[[Any], Any], batches: List[Any]) -> Iterator[Any]:
        """``work`` over ``batches``, in order; up to `parallel_batches` at once. A batch's
        search depends on that batch alone, so the results are those of one at a time."""
        if self.parallel_batches == 1 or len(batches) == 1:
            yield from map(work, batches)
            return
        with ThreadPoolExecutor(max_workers=min(self.parallel_batches, len(batches))) as pool:
            yield from pool.map(work, batches)  # map's iterator cancels the batches not started when it fails

    def _prefix_ids(self, prefixes: Optional[Sequence[str]], lines: Sequence[str], cap: int) -> List[List[int]]:
        if prefixes is None:
            return []
        if len(prefixes) != len(lines):
            raise ExportError(f"{len(prefixes)} prefixes for {len(lines)} lines")
        ids = [self.tgt_vocab.encode(p) if p.strip() else [] for p in prefixes]
        for i, p in enumerate(ids):
            if len(p) >= cap:
                raise ExportError(f"line {i + 1}: its prefix takes {len(p):,} target subwords; an output holds at "
                                  f"most {cap - 1:,} before its end of sentence (--max-output-tokens)")
        return ids

    def _segments(self, lines: Sequence[str], todo: List[int], max_input: int,
                  on_split: Optional[Callable[[int, int, int], None]]) -> Tuple[List[List[int]], List[int]]:
        segments: List[List[int]] = []
        owners: List[int] = []
        for k, i in enumerate(todo):
            ids = self.src_vocab.encode(lines[i])
            pieces = [ids] if len(ids) + 1 <= max_input else self._split(ids, max_input - 1)
            if len(pieces) > 1 and on_split is not None:
                on_split(i, len(ids) + 1, len(pieces))
            segments.extend(pieces)
            owners.extend([k] * len(pieces))
        return segments, owners

    def _split(self, ids: List[int], size: int) -> List[List[int]]:
        if self._word_starts is None or self._sentence_ends is None:
            pieces = self.src_vocab.pieces
            self._word_starts = np.array([p.startswith("\u2581") for p in pieces])
            self._sentence_ends = np.array([ends_sentence(p) for p in pieces])
        starts, ends = self._word_starts, self._sentence_ends
        return split_source(ids, max(size, 1), lambda t: bool(starts[t]), lambda t: bool(ends[t]))

    def _search(self, plan: _Plan, options: Options, src: np.ndarray, mask: np.ndarray,
                prefixes: List[List[int]], keys: List[int]) -> List[List[Hypothesis]]:
        max_len = output_limits(mask.sum(1), plan.ratio, plan.offset, plan.max_output)
        shortlisted = None
        if self.shortlist is not None and options.sampling is None:  # sampling draws from the whole vocabulary
            rows = self.shortlist.rows(src, [t for p in prefixes for t in p])
            shortlisted = ShortlistedModel(self.model, rows)
            prefixes = [shortlisted.to_shortlist(p) for p in prefixes]
        hyps = self._run_search(shortlisted or self.model, plan, options, src, mask, max_len, prefixes, keys)
        if shortlisted is not None:
            for nbest in hyps:
                for h in nbest:
                    h.tokens = shortlisted.to_vocabulary(h.tokens)
        return hyps

    def _run_search(self, model: Any, plan: _Plan, options: Options, src: np.ndarray, mask: np.ndarray,
                    max_len: np.ndarray, prefixes: List[List[int]], keys: List[int]) -> List[List[Hypothesis]]:
        model, max_len = with_prefixes(model, prefixes, max_len)
        model = with_min_length(model, plan.min_output, max_len)
        model = with_repeats_blocked(model, plan.no_repeat, max_len)
        stop = options.should_stop
        if options.sampling is not None:
            return sample_search(model, src, mask, max_len, options.sampling, keys, n=plan.nbest, alpha=plan.alpha,
                                 normalize=plan.normalize, should_stop=stop)
        if plan.greedy or plan.beam <= 1 and plan.nbest <= 1:
            return [[h] for h in greedy_search(model, src, mask, max_len, options.return_attention, stop)]
        return beam_search(model, src, mask, max_len, beam=max(plan.beam, plan.nbest), alpha=plan.alpha,
                           normalize=plan.normalize, nbest=plan.nbest, return_attention=options.return_attention,
                           should_stop=stop, coverage=plan.coverage)

    def _finish(self, hyp: Hypothesis, src_ids: List[int], prefix: str, prefix_ids: List[int]) -> Translation:
        text = self.tgt_vocab.decode(hyp.tokens)
        if prefix_ids:
            text = restore_prefix(text, self.tgt_vocab.decode(prefix_ids), prefix)
        attention = hyp.attention[:, : len(src_ids) + 1] if hyp.attention is not None else None
        return Translation(text=text, score=hyp.score, tokens=hyp.tokens,
                           src_pieces=[self.src_vocab.id_to_piece(i) for i in src_ids],
                           tgt_pieces=[self.tgt_vocab.id_to_piece(i) for i in hyp.tokens], attention=attention)


def restore_prefix(output: str, decoded_prefix: str, prefix: str) -> str:
    """``output`` starting with the user's prefix as given (whitespace runs as one space),
    where the vocabulary decoded some of its characters otherwise."""
    given = " ".join(prefix.split())
    if given and decoded_prefix and output.startswith(decoded_prefix):
        return given + output[len(decoded_prefix):]
    return output


def join_pieces(parts: List[List[Translation]]) -> List[Translation]:
    """One n-best list from those of a line's pieces: the k-th joins their k-th (or last),
    its score their mean."""
    joined = []
    for k in range(max(len(p) for p in parts)):
        chosen = [p[min(k, len(p) - 1)] for p in parts]
        joined.append(Translation(text=" ".join(t.text for t in chosen if t.text),
                                  score=sum(t.score for t in chosen) / len(chosen),
                                  tokens=[tok for t in chosen for tok in t.tokens],
                                  src_pieces=[p for t in chosen for p in t.src_pieces],
                                  tgt_pieces=[p for t in chosen for p in t.tgt_pieces]))
    return joined


def available_cores() -> int:
    """The cores this process may run on (its affinity), the default number of batches at once."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def load(directory: str | os.PathLike, threads: Optional[int] = None, parallel_batches: int = 1) -> Translator:
    """An export directory, checked and loaded (`ExportError` naming the file otherwise)."""
    return Translator(directory, threads, parallel_batches)


__all__ = ["Options", "Translation", "Translator", "load", "replace"]
