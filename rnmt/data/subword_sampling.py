"""Subword regularisation: a new segmentation of the training text every epoch.

Two methods, chosen by the vocabulary's model type:

- **unigram**: subword regularisation by sampling (Kudo, 2018, "Subword Regularization:
  Improving Neural Network Translation Models with Multiple Subword Candidates"). A
  segmentation x of a word is drawn among the word's ``nbest`` most probable segmentations
  (sentencepiece's deterministic n-best search) with probability proportional to
  P(x)^alpha, where log P(x) is the sum of the pieces' log-probabilities (Kudo's eq. 11,
  restricted to the l-best as in his section 3.1).
- **bpe**: BPE-dropout (Provilkov, Emelianenko and Voita, 2020, "BPE-Dropout: Simple and
  Effective Subword Regularization"): the word starts as characters and, at each step, the
  applicable merges are each dropped with probability ``dropout``; the highest-priority merge
  left is applied (every occurrence of a word draws anew), and the word is done when none is
  left. With ``dropout`` 0 this is sentencepiece's own BPE segmentation (a test checks it).

Both work word by word: a sentencepiece model trained with ``split_by_whitespace`` (the
default, and how rnmt trains them) has no piece that crosses a word boundary, so a
sentence's segmentation is its words' segmentations side by side, and the unigram
probability of a sentence is the product of its words'. The words, their n-best lists and
their characters are found once; an epoch then costs a draw per word occurrence.

sentencepiece can sample too (``enable_sampling``), but its generator is salted per process
(two processes seeded alike with ``set_random_generator_seed`` sample differently), so a
resumed run could not repeat an epoch's segmentation. Here every draw comes from a numpy
generator the caller seeds (``(seed, epoch)`` in training), so an epoch's segmentation is a
pure function of the text, the vocabulary, the options and that seed.

A word with a character outside the vocabulary keeps its deterministic segmentation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rnmt.data.vocab import UNK_ID, Vocab
from rnmt.errors import UserError

WORD_START = "\u2581"  # sentencepiece's visible space, the first character of a word's first piece


@dataclass
class Words:
    """Sentences as sequences of word ids (into `words`), the words as their surfaces.

    ``occurrences[offsets[k]:offsets[k + 1]]`` are sentence k's words; ``fixed[w]`` is word
    w's deterministic segmentation (ids)."""

    words: List[str]
    fixed: List[List[int]]
    occurrences: np.ndarray
    offsets: np.ndarray


def split_words(vocab: Vocab, texts: Sequence[str]) -> Words:
    """The words of ``texts`` as the vocabulary segments them: a word is a piece starting
    with the visible space and the pieces after it up to the next such piece."""
    index: Dict[str, int] = {}
    words: List[str] = []
    fixed: List[List[int]] = []
    occurrences: List[int] = []
    counts: List[int] = []
    chunk = 4096
    for lo in range(0, len(texts), chunk):
        part = list(texts[lo:lo + chunk])
        for pieces, ids in zip(vocab.processor.Encode(part, out_type=str), vocab.encode_batch(part)):
            n = 0
            for surface, group in _group_words(pieces, ids):
                w = index.get(surface)
                if w is None:
                    w = index[surface] = len(words)
                    words.append(surface)
                    fixed.append(group)
                occurrences.append(w)
                n += 1
            counts.append(n)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Words(words, fixed, np.asarray(occurrences, dtype=np.int64), offsets)


def _group_words(pieces: Sequence[str], ids: Sequence[int]) -> List[Tuple[str, List[int]]]:
    groups: List[Tuple[str, List[int]]] = []
    for piece, i in zip(pieces, ids):
        if piece.startswith(WORD_START) or not groups:
            groups.append((piece, [i]))
        else:
            surface, group = groups[-1]
            group.append(i)
            groups[-1] = (surface + piece, group)
    return groups


# BPE-dropout's memo of merges per symbol sequence is emptied above this many sequences
# (a few hundred bytes each; the Spanish side of the 10,000-pair sample meets about 250,000
# in three epochs).
MAX_REMEMBERED = 1_000_000


class _Segmenter:
    """Samples the segmentation of every word occurrence of `Words` (one method each)."""

    def sample(self, words: Words, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


class NBestSampler(_Segmenter):
    """Unigram: each occurrence draws one of its word's n-best segmentations, P(x)^alpha."""

    def __init__(self, vocab: Vocab, words: Words, nbest: int, alpha: float) -> None:
        scores = np.array([vocab.processor.GetScore(i) for i in range(vocab.size)], dtype=np.float64)
        cand_ids: List[int] = []
        cand_lens: List[int] = []
        cum: List[float] = []  # word w's candidate j ends at w + (its cumulative probability)
        first = np.zeros(len(words.words) + 1, dtype=np.int64)
        texts = [w[1:] if w.startswith(WORD_START) else "" for w in words.words]
        sampled = [bool(t) and UNK_ID not in f for t, f in zip(texts, words.fixed)]
        todo = [t for t, s in zip(texts, sampled) if s]
        lists = iter(vocab.processor.NBestEncodeAsIds(todo, nbest_size=nbest) if todo else [])
        for w, fixed in enumerate(words.fixed):
            cands = next(lists) if sampled[w] else []
            cands = [c for c in cands if c] or [fixed]
            logp = np.array([scores[c].sum() for c in cands]) * alpha
            p = np.exp(logp - logp.max())
            c = np.cumsum(p / p.sum())
            c[-1] = 1.0
            for ids, end in zip(cands, c):
                cand_ids.extend(ids)
                cand_lens.append(len(ids))
                cum.append(w + float(end))
            first[w + 1] = len(cand_lens)
        self.cand_ids = np.asarray(cand_ids, dtype=np.int32)
        self.cand_lens = np.asarray(cand_lens, dtype=np.int64)
        self.cand_start = np.zeros(len(cand_lens) + 1, dtype=np.int64)
        np.cumsum(self.cand_lens, out=self.cand_start[1:])
        self.cum = np.asarray(cum, dtype=np.float64)

    def sample(self, words: Words, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        occ = words.occurrences
        u = rng.random(len(occ))
        choice = np.searchsorted(self.cum, occ + u, side="right")
        choice = np.minimum(choice, len(self.cand_lens) - 1)
        lens = self.cand_lens[choice]
        return _gather(self.cand_ids, self.cand_start[choice], lens), lens


class BPEDropout(_Segmenter):
    """BPE: merges dropped with probability ``dropout`` at every step (Provilkov et al., 2020,
    their Algorithm 1). The merge order is the model's piece scores, higher first and ties
    to the left, as sentencepiece applies them.

    At each step the applicable merges are tried in that order, each kept with probability
    1 - ``dropout``, and the first one kept is applied: the same distribution as dropping
    each independently and applying the best of those left, with a draw or two per step.
    The ordered merges of each symbol sequence met are remembered (`_next`): a word's
    segmentations stay close to its deterministic one, so few sequences ever occur.
    """

    def __init__(self, vocab: Vocab, words: Words, dropout: float) -> None:
        sp = vocab.processor
        self.dropout = dropout
        self.ids: Dict[str, int] = {}
        self.scores: Dict[str, float] = {}
        for i in range(vocab.size):
            if sp.IsControl(i) or sp.IsUnknown(i) or sp.IsUnused(i):
                continue
            piece = sp.IdToPiece(i)
            self.ids[piece] = i
            if len(piece) > 1:
                self.scores[piece] = sp.GetScore(i)
        # Each word's characters, or None: the word keeps its deterministic segmentation.
        self.chars: List[Optional[Tuple[str, ...]]] = [
            tuple(w) if len(w) > 1 and UNK_ID not in f and all(ch in self.ids for ch in w) else None
            for w, f in zip(words.words, words.fixed)]
        self._next: Dict[Tuple[str, ...], List[Tuple[str, ...]]] = {}

    def merges(self, symbols: Tuple[str, ...]) -> List[Tuple[str, ...]]:
        """The sequences each applicable merge of ``symbols`` gives, in merge order."""
        found = self._next.get(symbols)
        if found is None:
            ranked = sorted((-s, i) for i in range(len(symbols) - 1)
                            if (s := self.scores.get(symbols[i] + symbols[i + 1])) is not None)
            found = self._next[symbols] = [symbols[:i] + (symbols[i] + symbols[i + 1],) + symbols[i + 2:]
                                           for _, i in ranked]
        return found

    def segment(self, symbols: Tuple[str, ...], draw: Callable[[], float]) -> Tuple[str, ...]:
        """Merge ``symbols`` until no merge is applied; ``draw()`` gives U(0, 1) numbers."""
        p = self.dropout
        while True:
            for merged in self.merges(symbols):
                if p == 0.0 or draw() >= p:
                    symbols = merged
                    break
            else:
                return symbols

    def sample(self, words: Words, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        if len(self._next) > MAX_REMEMBERED:  # a memo only: the segmentation does not depend on it
            self._next.clear()
        draw = _Draws(rng)
        ids, chars = self.ids, self.chars
        out: List[int] = []
        lens = np.empty(len(words.occurrences), dtype=np.int64)
        for k, w in enumerate(words.occurrences.tolist()):
            symbols = chars[w]
            if symbols is None:
                fixed = words.fixed[w]
                out.extend(fixed)
                lens[k] = len(fixed)
                continue
            merged = self.segment(symbols, draw)
            out.extend([ids[s] for s in merged])
            lens[k] = len(merged)
        return np.asarray(out, dtype=np.int32), lens


class _Draws:
    """U(0, 1) numbers from ``rng`` one at a time, drawn in blocks (a numpy call per number
    would cost more than the merge it decides)."""

    def __init__(self, rng: np.random.Generator, block: int = 1 << 16) -> None:
        self.rng, self.block = rng, block
        self.buf: List[float] = []
        self.pos = 0

    def __call__(self) -> float:
        if self.pos == len(self.buf):
            self.buf, self.pos = self.rng.random(self.block).tolist(), 0
        self.pos += 1
        return self.buf[self.pos - 1]


def _gather(flat: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``concatenate([flat[s:s + n] for s, n in zip(starts, lens)])`` without a Python loop."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=flat.dtype)
    ends = np.cumsum(lens)
    # position j of the output reads flat[starts[k] + (j - (ends[k] - lens[k]))]
    shift = np.repeat(starts - (ends - lens), lens)
    return flat[np.arange(total, dtype=np.int64) + shift]


class SentenceSampler:
    """Samples segmentations of fixed sentences under one vocabulary.

    ``sample(rng)`` gives ``(ids, lengths)``: every sentence's ids back to back (no
    ``</s>``) and each sentence's length. The same generator state gives the same result.
    """

    def __init__(self, vocab: Vocab, texts: Sequence[str], alpha: float = 0.1, nbest: int = 64,
                 dropout: float = 0.1) -> None:
        kind = model_type(vocab)
        self.words = split_words(vocab, texts)
        self.segmenter: _Segmenter
        if kind == "unigram":
            self.segmenter = NBestSampler(vocab, self.words, nbest, alpha)
        elif kind == "bpe":
            self.segmenter = BPEDropout(vocab, self.words, dropout)
        else:
            raise UserError(f"{vocab.path or 'vocabulary'}: data.subword_sampling needs a unigram or BPE "
                            f"sentencepiece model, this one is {kind}")

    def __len__(self) -> int:
        return len(self.words.offsets) - 1

    def sample(self, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        ids, word_lens = self.segmenter.sample(self.words, rng)
        per_word = np.concatenate([[0], np.cumsum(word_lens)])
        sent_lens = per_word[self.words.offsets[1:]] - per_word[self.words.offsets[:-1]]
        return ids, sent_lens.astype(np.int64)


def model_type(vocab: Vocab) -> str:
    """``unigram``, ``bpe``, ``word`` or ``char``: the trainer spec recorded in the model."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]  # generated protobuf code
    proto.ParseFromString(vocab.to_bytes())
    return {1: "unigram", 2: "bpe", 3: "word", 4: "char"}.get(proto.trainer_spec.model_type, "unknown")
