"""From subword pieces to whitespace words, and from word-level scores to Pharaoh links.

Sentencepiece marks the start of every whitespace word with ``▁`` (U+2581) on its first
piece, so piece k belongs to word ``w`` = (number of ``▁``-pieces among pieces 0..k) - 1;
a first piece without the mark still opens word 0.

A piece-level matrix ``M[target piece, source piece]`` becomes a word-level one by

* **summing over the source pieces** of a source word (for attention: the probability mass
  the step puts on that word), or averaging them (``source="mean"``, for gate values,
  which are not a distribution), and
* **averaging over the target pieces** of a target word (every piece of the word is one
  decoding step; the word gets their mean).

Each target word is then linked to its highest-scoring source word (``argmax_links``), or
to every source word scoring at least a threshold (``threshold_links``).
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

WORD_START = "\u2581"

Link = Tuple[int, int]  # (source word, target word), 0-based


def word_index_of_pieces(pieces: Sequence[str]) -> List[int]:
    """The 0-based word index of every piece."""
    index, out = -1, []
    for piece in pieces:
        if piece.startswith(WORD_START) or index < 0:
            index += 1
        out.append(index)
    return out


def words_of_pieces(pieces: Sequence[str]) -> List[str]:
    """The words the pieces spell (``▁`` removed), for labels."""
    words: List[str] = []
    for piece, w in zip(pieces, word_index_of_pieces(pieces)):
        if w == len(words):
            words.append("")
        words[w] += piece.replace(WORD_START, "")
    return words


def _group_matrix(n_words: int, word_of_piece: Sequence[int], mean: bool) -> np.ndarray:
    """[words, pieces] 0/1 (or 1/count) matrix that sums (or averages) pieces into words."""
    g = np.zeros((n_words, len(word_of_piece)), dtype=np.float64)
    for k, w in enumerate(word_of_piece):
        g[w, k] = 1.0
    if mean:
        g /= np.maximum(g.sum(1, keepdims=True), 1.0)
    return g


def aggregate_to_words(matrix, tgt_pieces: Sequence[str], src_pieces: Sequence[str],
                       source: str = "sum") -> np.ndarray:
    """Word-level ``[target words, source words]`` scores from a piece-level matrix.

    ``matrix`` is ``[len(tgt_pieces), len(src_pieces)]`` (extra rows/columns, such as the
    end-of-sentence step or token, must be cut off before). Target pieces are averaged;
    source pieces are summed (``source="sum"``) or averaged (``source="mean"``).
    """
    if source not in ("sum", "mean"):
        raise ValueError(f"source must be 'sum' or 'mean', got {source!r}")
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (len(tgt_pieces), len(src_pieces)):
        raise ValueError(f"matrix shape {m.shape} does not match {len(tgt_pieces)} target and "
                         f"{len(src_pieces)} source pieces")
    tw, sw = word_index_of_pieces(tgt_pieces), word_index_of_pieces(src_pieces)
    rows = _group_matrix(max(tw, default=-1) + 1, tw, mean=True)
    cols = _group_matrix(max(sw, default=-1) + 1, sw, mean=source == "mean")
    return rows @ m @ cols.T


def argmax_links(word_scores) -> List[Link]:
    """Each target word j linked to its best source word i: ``(i, j)``; ties go to the
    first source word."""
    m = np.asarray(word_scores)
    if m.size == 0:
        return []
    return [(int(i), j) for j, i in enumerate(m.argmax(axis=1))]


def threshold_links(word_scores, threshold: float) -> List[Link]:
    """Every ``(i, j)`` whose score is at least ``threshold``."""
    m = np.asarray(word_scores)
    return [(int(i), int(j)) for j, i in zip(*np.nonzero(m >= threshold))]


def format_pharaoh(links: Sequence[Link]) -> str:
    """``i-j`` links sorted by target then source position, space-separated."""
    return " ".join(f"{i}-{j}" for i, j in sorted(set(links), key=lambda link: (link[1], link[0])))
