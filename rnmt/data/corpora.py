"""The training data of a run: one or several weighted corpora, and each epoch's pairs.

``data.train`` is one prefix or a list of corpora with weights. Each corpus is encoded
(and cached) on its own; together they form one index space, corpus k's pair i being
``start_k + i`` (`ConcatCorpus`). The weights decide which pairs an epoch contains
(`epoch_pairs`):

    a pair of a corpus of weight w appears floor(w) times in every epoch, and once more
    with probability w - floor(w), drawn per pair by numpy.random.default_rng([seed,
    epoch, 1]).

So weight 2 shows every pair twice per epoch, 0.5 about half of the pairs (a new half each
epoch), 1.5 every pair once and about half of them twice; the expected share of corpus k in
an epoch is ``w_k n_k / sum_j w_j n_j``. The token batches of an epoch are then built from
that multiset of pairs as from a single corpus (`TokenBatchSampler`: the same shuffle,
length bucketing and sharding over processes), so an epoch is still a pure function of
(seed, epoch) and a resumed run sees exactly the batches the uninterrupted one would have.
With every weight 1 (in particular a plain prefix) nothing is drawn and the batches are
those of the concatenated corpora.

With ``data.subword_sampling.enabled`` the pairs are also segmented anew every epoch
(`rnmt.data.subword_sampling`, seeded by ``[seed, epoch, 2, side]``): the epoch's batches
are then built from the epoch's lengths and read the epoch's ids (`TrainingData.view`).
A sampled side longer than ``data.max_len`` keeps its deterministic segmentation, so the
set of training pairs is the one the deterministic encoding kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rnmt.data.corpus import EncodedCorpus, encode_corpus
from rnmt.data.reading import iter_parallel
from rnmt.data.subword_sampling import SentenceSampler
from rnmt.data.vocab import EOS_ID, Vocab
from rnmt.errors import UserError

WEIGHT_STREAM = 1  # the third seed word of the weights' generator
# The most pairs one epoch may hold, repeats counted (sum of weight x pairs): 200 million
# indices are 1.6 GB; the config bounds each weight (rnmt.config.MAX_CORPUS_WEIGHT), this
# bounds their product with the corpus sizes, known once the corpora are read.
MAX_EPOCH_PAIRS = 200_000_000
SUBWORD_STREAM = 2  # ... and of the subword sampling's


@dataclass
class CorpusFiles:
    """One training corpus: its two files and its weight (``data.train``'s entries)."""

    src: Path
    tgt: Path
    weight: float = 1.0


class ConcatCorpus:
    """Several encoded corpora read as one: pair ``starts[k] + i`` is corpus k's pair i.

    It offers what batching and `collate` read from an `EncodedCorpus` (``len``,
    ``src_lens``, ``tgt_lens``, ``src_ids``, ``tgt_ids``, ``pair``)."""

    def __init__(self, parts: Sequence[EncodedCorpus]) -> None:
        self.parts = list(parts)
        sizes = [len(p) for p in self.parts]
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.src_lens = np.concatenate([p.src_lens for p in self.parts]).astype(np.int32)
        self.tgt_lens = np.concatenate([p.tgt_lens for p in self.parts]).astype(np.int32)
        self.n_empty = sum(p.n_empty for p in self.parts)
        self.n_too_long = sum(p.n_too_long for p in self.parts)
        self.cache_path: Optional[Path] = None

    def __len__(self) -> int:
        return int(self.starts[-1])

    def _locate(self, i: int) -> Tuple[EncodedCorpus, int]:
        k = int(np.searchsorted(self.starts, i, side="right")) - 1
        return self.parts[k], int(i - self.starts[k])

    def src_ids(self, i: int) -> np.ndarray:
        part, j = self._locate(i)
        return part.src_ids(j)

    def tgt_ids(self, i: int) -> np.ndarray:
        part, j = self._locate(i)
        return part.tgt_ids(j)

    def pair(self, i: int) -> Tuple[np.ndarray, np.ndarray]:
        if not 0 <= i < len(self):
            raise IndexError(f"pair {i} out of range for {len(self)} pairs")
        return self.src_ids(i), self.tgt_ids(i)


def check_epoch_size(sizes: Sequence[int], weights: Sequence[float]) -> None:
    """A `UserError` when an epoch would hold more than `MAX_EPOCH_PAIRS` pairs (weight
    ``w`` shows about ``w * n`` pairs of a corpus of ``n``; ceil counts the drawn one)."""
    total = sum(math.ceil(w) * n for n, w in zip(sizes, weights))
    if total > MAX_EPOCH_PAIRS:
        shares = ", ".join(f"data.train[{k}]: {n:,} pairs x weight {w:g}"
                           for k, (n, w) in list(enumerate(zip(sizes, weights)))[:3])
        shares += ", ..." if len(sizes) > 3 else ""
        raise UserError(f"data.train: an epoch would hold up to {total:,} pairs, more than {MAX_EPOCH_PAIRS:,} "
                        f"({shares}); lower the weights")


def epoch_pairs(sizes: Sequence[int], weights: Sequence[float], seed: int, epoch: int) -> np.ndarray:
    """The pairs of ``epoch`` (indices into the concatenated corpora, with repeats, in
    corpus order): each pair of a corpus of weight w floor(w) times, and once more with
    probability w - floor(w), drawn with ``default_rng([seed, epoch, WEIGHT_STREAM])``."""
    rng = np.random.default_rng([seed, epoch, WEIGHT_STREAM])
    parts: List[np.ndarray] = []
    start = 0
    for n, w in zip(sizes, weights):
        whole = int(math.floor(w))
        counts = np.full(n, whole, dtype=np.int64)
        if w > whole:
            counts += rng.random(n) < (w - whole)
        parts.append(np.repeat(np.arange(start, start + n, dtype=np.int64), counts))
        start += n
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


Plan = Tuple[Optional[np.ndarray], np.ndarray, np.ndarray]


class TrainingData:
    """The run's training pairs: the corpora, their weights and (optionally) a sampled
    segmentation per epoch.

    ``corpus`` is the deterministic encoding (one `EncodedCorpus`, or a `ConcatCorpus`);
    `plan` is what `TokenBatchSampler` builds an epoch from (None when every epoch is the
    whole corpus as encoded: then the sampler works exactly as for a single corpus);
    ``view(epoch)`` is what `collate` reads an epoch's batches from.
    """

    def __init__(self, parts: Sequence[EncodedCorpus], weights: Sequence[float], seed: int,
                 samplers: Optional[Tuple[SentenceSampler, SentenceSampler]] = None,
                 max_len: Optional[int] = None) -> None:
        self.parts = list(parts)
        self.weights = [float(w) for w in weights]
        self.seed = seed
        self.samplers = samplers
        self.max_len = max_len
        self.corpus = self.parts[0] if len(self.parts) == 1 else ConcatCorpus(self.parts)
        self._views: Dict[int, EncodedCorpus] = {}
        check_epoch_size([len(p) for p in self.parts], self.weights)

    def __len__(self) -> int:
        return len(self.corpus)

    @property
    def weighted(self) -> bool:
        return any(w != 1.0 for w in self.weights)

    @property
    def varies(self) -> bool:
        """Whether epochs differ in their pairs or segmentation (the sampler needs `plan`)."""
        return self.weighted or self.samplers is not None

    @property
    def key(self) -> Optional[str]:
        """The cache entries' names: a changed corpus changes it (resume checks it)."""
        names = [p.cache_path.name if p.cache_path is not None else None for p in self.parts]
        if any(n is None for n in names):
            return None
        return "+".join(str(n) for n in names)

    def pairs(self, epoch: int) -> Optional[np.ndarray]:
        """The pairs of ``epoch`` (with repeats), or None when it is every pair once."""
        if not self.weighted:
            return None
        return epoch_pairs([len(p) for p in self.parts], self.weights, self.seed, epoch)

    def plan(self, epoch: int) -> Plan:
        """``(pairs or None, source lengths, target lengths)`` of ``epoch``."""
        view = self.view(epoch)
        return self.pairs(epoch), view.src_lens, view.tgt_lens

    def view(self, epoch: int) -> EncodedCorpus:
        """The corpus ``epoch``'s batches read: the deterministic encoding, or this epoch's
        sampled segmentation (the last two epochs' are kept: an update's batches may
        cross an epoch's end)."""
        if self.samplers is None:
            return self.corpus  # type: ignore[return-value]
        view = self._views.get(epoch)
        if view is None:
            view = self._views[epoch] = self._resegment(epoch)
            for old in sorted(self._views)[:-2]:
                del self._views[old]
        return view

    def _resegment(self, epoch: int) -> EncodedCorpus:
        assert self.samplers is not None
        src_sampler, tgt_sampler = self.samplers
        sides = []
        for side, (sampler, get, extra) in enumerate(((src_sampler, self.corpus.src_ids, 1),
                                                      (tgt_sampler, self.corpus.tgt_ids, 0))):
            ids, lens = sampler.sample(np.random.default_rng([self.seed, epoch, SUBWORD_STREAM, side]))
            pieces = np.split(ids, np.cumsum(lens)[:-1]) if len(lens) else []
            out = []
            for i, seg in enumerate(pieces):
                if self.max_len and len(seg) + 1 > self.max_len:
                    seg = np.asarray(get(i), dtype=np.int32)  # deterministic (src already ends with </s>)
                    out.append(seg[:-1] if extra else seg)
                else:
                    out.append(seg)
            if extra:
                out = [np.append(seg, np.int32(EOS_ID)) for seg in out]
            flat = np.concatenate(out).astype(np.int32) if out else np.zeros(0, dtype=np.int32)
            offsets = np.zeros(len(out) + 1, dtype=np.int64)
            np.cumsum([len(s) for s in out], out=offsets[1:])
            sides.append((flat, offsets))
        (src, src_off), (tgt, tgt_off) = sides
        return EncodedCorpus(src=src, src_offsets=src_off, tgt=tgt, tgt_offsets=tgt_off,
                             line_numbers=np.arange(len(src_off) - 1, dtype=np.int64))


def kept_texts(parts: Sequence[EncodedCorpus], files: Sequence[CorpusFiles]) -> Tuple[List[str], List[str]]:
    """The source and target lines of every kept pair, in the corpora's index order."""
    src: List[str] = []
    tgt: List[str] = []
    for part, cf in zip(parts, files):
        wanted = part.line_numbers.tolist()
        k = 0
        for i, s, t in iter_parallel(cf.src, cf.tgt):
            if k < len(wanted) and i == wanted[k]:
                src.append(s)
                tgt.append(t)
                k += 1
        part.release_pages()
    return src, tgt


def load_training_data(files: Sequence[CorpusFiles], src_vocab: Vocab, tgt_vocab: Vocab, cache: Path,
                       max_len: Optional[int], seed: int, sampling: Optional[Dict[str, float]] = None,
                       log: Callable[..., None] = print) -> TrainingData:
    """Encode (or load from the cache) every corpus, and prepare the subword sampling
    (``sampling``: the ``alpha``, ``nbest`` and ``dropout`` of ``data.subword_sampling``, or
    None when it is off)."""
    parts = [encode_corpus(cf.src, cf.tgt, src_vocab, tgt_vocab, cache, max_len) for cf in files]
    samplers = None
    if sampling is not None:
        started = time.perf_counter()
        src_lines, tgt_lines = kept_texts(parts, files)
        options = dict(alpha=float(sampling["alpha"]), nbest=int(sampling["nbest"]),
                       dropout=float(sampling["dropout"]))
        samplers = (SentenceSampler(src_vocab, src_lines, **options),  # type: ignore[arg-type]
                    SentenceSampler(tgt_vocab, tgt_lines, **options))  # type: ignore[arg-type]
        log(f"subword sampling: {len(samplers[0].words.words)} source and {len(samplers[1].words.words)} target "
            f"words prepared in {time.perf_counter() - started:.1f} s")
    return TrainingData(parts, [cf.weight for cf in files], seed, samplers, max_len)
