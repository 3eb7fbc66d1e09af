"""Word alignments from a forced decoding: attention weights or per-source update gates."""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from rnmt.analysis.words import aggregate_to_words, argmax_links, threshold_links
from rnmt.errors import UserError
from rnmt.search.forced import ForcedDecoding

SOURCES = ("attention", "update-gate")


def check_threshold(threshold: Optional[float], name: str = "threshold") -> None:
    """A link threshold is a number in [0, 1], the range of the scores it is compared with
    (attention summed over a word's pieces, gates averaged): outside it, or NaN, it would
    silently link every pair or none."""
    number = isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
    if threshold is not None and not (number and 0.0 <= threshold <= 1.0):
        raise UserError(f"{name} must be a number in [0, 1], got {threshold!r}")


def piece_matrix(fd: ForcedDecoding, source: str) -> np.ndarray:
    """The ``[J, S]`` piece-level scores behind an alignment (end-of-sentence step and
    source ``</s>`` removed)."""
    if source == "attention":
        if fd.attention is None:
            raise UserError("the model reports no attention weights in its step extras")
        m = fd.attention
    elif source == "update-gate":
        if "z" not in fd.source_gates:
            raise UserError("the model has no source-position gates: --from update-gate needs a "
                            "model whose decoding steps report 'source_gates' (the cyclic Cseq2seq)")
        m = fd.source_gates["z"]
    else:
        raise ValueError(f"unknown alignment source {source!r}; choose from {SOURCES}")
    return m[:-1, :-1]


def word_alignment(fd: ForcedDecoding, src_pieces: Sequence[str], tgt_pieces: Sequence[str],
                   source: str = "attention", threshold: Optional[float] = None) -> List[tuple]:
    """Links ``(source word, target word)`` of one pair.

    Attention is summed over the pieces of a source word, gate values averaged; both are
    averaged over the pieces of a target word. Without ``threshold`` every target word
    links to its argmax source word; with it, to every source word scoring >= threshold.
    """
    if not src_pieces or not tgt_pieces:
        return []
    words = aggregate_to_words(piece_matrix(fd, source), tgt_pieces, src_pieces,
                               source="sum" if source == "attention" else "mean")
    return argmax_links(words) if threshold is None else threshold_links(words, threshold)
