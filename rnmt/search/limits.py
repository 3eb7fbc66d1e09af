"""How long a translation may be, and what happens to a source line too long for it.

One rule for `rnmt translate`, the Python API and the server: an output has at most

    min(floor(source length * search.max_len_ratio) + search.max_len_offset, max_output_tokens)

subwords, end-of-sentence mark included, where the source length counts its end mark
too; ``max_output_tokens`` defaults to `MAX_OUTPUT_TOKENS` everywhere (the server's
``--max-output-tokens``). The cap bounds the work a line can cause whatever its length.

The cap alone would cut off the translation of a long line, so the command line and the
API also translate a source line longer than ``max_input_tokens`` subwords in pieces:
cut after a sentence end where there is one in the second half of the piece, else before
a word, never inside one unless a single word is longer than a piece. Each piece is
translated on its own and the translations are joined with a space: one output line per
input line. The default piece length is the longest source whose output limit fits under
the cap, so no piece's translation is cut short by it. The server does not split: it
refuses a request over ``--max-request-tokens`` (413) instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

if TYPE_CHECKING:  # tensors come in from the caller: the limits are read without loading PyTorch
    import torch

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


def output_limits(src_len: torch.Tensor, ratio: float, offset: int, cap: Optional[int]) -> torch.Tensor:
    """The longest output (subwords, end mark included) of each source of ``src_len``
    subwords (end mark included): ``ratio * length + offset``, at most ``cap``, at least 1."""
    # Each term clamped to the cap first: a large ratio (1e300 is finite) overflows float32 to
    # inf, whose cast to int64 is negative, and a large offset wraps the sum; either made the
    # limit 1, an empty output, silently. Without a cap, 2**61 stands in for none.
    most = cap if cap is not None else 2 ** 61
    scaled = (src_len.float() * ratio).clamp(max=float(most))
    return (scaled.long() + min(offset, most)).clamp(min=1, max=most)


def search_rows(vocab_size: int) -> int:
    """The most hypotheses one search batch holds over a target vocabulary of
    ``vocab_size``: `MAX_SEARCH_ROWS`, fewer where their scores would pass
    `MAX_SEARCH_SCORES`."""
    return max(1, min(MAX_SEARCH_ROWS, MAX_SEARCH_SCORES // max(1, vocab_size)))


def sentences_per_batch(width: int, vocab_size: int = 0) -> int:
    """The most sentences one search batch takes when each holds ``width`` hypotheses
    over a target vocabulary of ``vocab_size`` (`search_rows`; at least one)."""
    return max(1, search_rows(vocab_size) // max(1, width))


def default_input_limit(ratio: float, offset: int, cap: int) -> int:
    """The longest source (subwords, end mark included) whose output limit is not cut by
    ``cap``: pieces of this length translate in full. At least `_MIN_PIECE`."""
    if ratio <= 0:
        return max(_MIN_PIECE, cap)  # the output limit does not grow with the source
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
