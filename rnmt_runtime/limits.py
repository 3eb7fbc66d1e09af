"""How long an output may be, how a long source line is cut, and how lines are batched:
``rnmt translate``'s rules, without torch: `rnmt.search.limits` takes its constants and
these functions from here, and adds the output limit over tensors.

An output has at most ``min(floor(source length * ratio) + offset, cap)`` subwords, end
mark included, where the source length counts its end mark too. A source line longer than
``max_input_tokens`` subwords is translated in pieces, cut after a sentence end in the second
half of the piece where there is one, else before a word; the pieces' translations are
joined with a space into one output line.
"""

from __future__ import annotations

from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

MAX_OUTPUT_TOKENS = 256  # subwords of one output, end mark included
# Hypotheses a batch's search holds at once (sentences x beam, or x samples): each is a row
# of [rows, target vocabulary] scores at every step, so a wide beam (a study of search
# errors at beam 1,000) takes fewer sentences per batch instead of the memory of all of
# them. Two bounds: the rows themselves (decoder states and attention grow with them
# whatever the vocabulary) and the scores of one step, 2^26 of them (256 MiB in fp32, one
# of the few [rows, vocabulary] arrays a step makes), so a 32k vocabulary takes 2,048 rows
# where an 8k one takes 8,192. Beam 5 at the default 4,000 source tokens per batch stays
# under both for vocabularies up to 10k (lines of three subwords or more, end mark included).
MAX_SEARCH_ROWS = 8192
MAX_SEARCH_SCORES = 1 << 26
_MIN_PIECE = 16  # subwords (end mark included) below which a piece is not worth cutting to
_SENTENCE_ENDS = (".", "!", "?", "…", "。", "！", "？")
_CLOSERS = "\"')]}»”’」』"  # may follow a sentence end: 'said.' ends at the quote


def output_limits(src_len: np.ndarray, ratio: float, offset: int, cap: Optional[int]) -> np.ndarray:
    """The longest output (end mark included) of each source of ``src_len`` subwords (end mark included)."""
    most = cap if cap is not None else 2 ** 61
    # float32 as rnmt computes it, each term clamped to the cap first so nothing overflows
    with np.errstate(over="ignore"):  # a huge ratio is inf in float32, then the cap
        scaled = np.minimum(src_len.astype(np.float32) * np.float32(ratio), np.float32(most))
    return np.clip(scaled.astype(np.int64) + min(offset, most), 1, most)


def search_rows(vocab_size: int) -> int:
    """The most hypotheses one search batch holds over a target vocabulary of
    ``vocab_size``: `MAX_SEARCH_ROWS`, fewer where their scores would pass
    `MAX_SEARCH_SCORES`."""
    return max(1, min(MAX_SEARCH_ROWS, MAX_SEARCH_SCORES // max(1, vocab_size)))


# Source tokens per batch when the caller does not say: fewer than rnmt's 4,000, because
# onnxruntime's arena keeps the largest step's intermediate buffers for the rest of the run
# (the additive attention's [hypotheses, source words, hidden] grows with the batch's source
# tokens times the beam). On the Bible test at beam 5 this halved the peak RSS (435 to 202
# MB) at the same speed (docs/deploy.md, "Measured"); the translations do not depend on it.
BATCH_TOKENS = 1000


def sentences_per_batch(width: int, vocab_size: int = 0) -> int:
    """The most sentences one search batch takes when each holds ``width`` hypotheses
    over a target vocabulary of ``vocab_size`` (`search_rows`; at least one)."""
    return max(1, search_rows(vocab_size) // max(1, width))


def default_input_limit(ratio: float, offset: int, cap: int) -> int:
    """The longest source (subwords, end mark included) whose output limit is not cut by
    ``cap``: pieces of this length translate in full. At least `_MIN_PIECE`."""
    if ratio <= 0:
        return max(_MIN_PIECE, cap)
    return max(_MIN_PIECE, int((cap - offset) / ratio))


def ends_sentence(piece: str) -> bool:
    """Whether a sentencepiece piece ends a sentence (``.``, ``?)``, ``!"``, ...)."""
    return piece.rstrip(_CLOSERS).endswith(_SENTENCE_ENDS)


def split_source(ids: Sequence[int], size: int, starts_word: Callable[[int], bool],
                 ends_sentence_at: Callable[[int], bool]) -> List[List[int]]:
    """Cut ``ids`` into pieces of at most ``size`` ids (``size >= 1``).

    Each cut falls after the last sentence end in the second half of the window, else
    before the last word start in it, else (one word longer than a piece) at ``size``.
    """
    pieces: List[List[int]] = []
    start, n = 0, len(ids)
    while n - start > size:
        end = start + size  # the next piece starts at a cut c with start < c <= end < n
        cut = next((c for c in range(end, start + size // 2, -1)
                    if starts_word(ids[c]) and ends_sentence_at(ids[c - 1])), None)
        if cut is None:
            cut = next((c for c in range(end, start, -1) if starts_word(ids[c])), end)
        pieces.append(list(ids[start:cut]))
        start = cut
    pieces.append(list(ids[start:]))
    return pieces


def token_batches(sentences: Sequence[Sequence[int]], max_tokens: int, max_sentences: Optional[int], eos_id: int,
                  pad_id: int) -> Iterator[Tuple[List[int], np.ndarray, np.ndarray]]:
    """``(indices, src [B, S], src_mask [B, S])`` over ``sentences`` with the end mark
    appended, longest first (a stable sort), ``B * S <= max_tokens`` unless one sentence
    alone is longer, at most ``max_sentences`` per batch."""
    seqs = [list(s) + [eos_id] for s in sentences]
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    batch: List[int] = []
    width = 0
    for i in order:
        wider = max(width, len(seqs[i]))
        if batch and (wider * (len(batch) + 1) > max_tokens or (max_sentences and len(batch) + 1 > max_sentences)):
            yield _padded(batch, seqs, pad_id)
            batch, wider = [], len(seqs[i])
        batch.append(i)
        width = wider
    if batch:
        yield _padded(batch, seqs, pad_id)


def _padded(batch: List[int], seqs: List[List[int]], pad_id: int) -> Tuple[List[int], np.ndarray, np.ndarray]:
    src = np.full((len(batch), max(len(seqs[i]) for i in batch)), pad_id, dtype=np.int64)
    for row, i in enumerate(batch):
        src[row, :len(seqs[i])] = seqs[i]
    return batch, src, src != pad_id
