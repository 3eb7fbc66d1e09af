"""Which source ids start a word and which end a sentence: what the page needs to cut a long
line as `rnmt translate` does (`rnmt.search.limits.split_source`), computed here with
rnmt's own rules because the browser's sentencepiece build does not expose piece strings.
"""

from __future__ import annotations

from typing import Dict, List

from rnmt.data.vocab import Vocab
from rnmt.search.limits import ends_sentence


def runs(flags: List[bool]) -> List[List[int]]:
    """The ids whose flag is set, as ``[first, count]`` runs (a 32k vocabulary's word starts
    are a few thousand runs, not 20,000 numbers)."""
    out: List[List[int]] = []
    for i, flag in enumerate(flags):
        if not flag:
            continue
        if out and out[-1][0] + out[-1][1] == i:
            out[-1][1] += 1
        else:
            out.append([i, 1])
    return out


def split_tables(model_bytes: bytes) -> Dict[str, List[List[int]]]:
    """``{"word_starts": runs, "sentence_ends": runs}`` over the vocabulary's ids."""
    pieces = Vocab.from_bytes(model_bytes).pieces
    return {"word_starts": runs([p.startswith("\u2581") for p in pieces]),
            "sentence_ends": runs([ends_sentence(p) for p in pieces])}
