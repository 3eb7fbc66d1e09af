"""Word-alignment quality: precision, recall and alignment error rate (Och & Ney, 2000).

Alignments are read in Pharaoh format: one sentence per line, links separated by
whitespace, each link ``i-j`` with 0-based source position ``i`` and target position ``j``.
Gold files may distinguish sure links (S) from possible links (P):

=========  ===========
``i-j``    sure
``i-j-S``  sure
``i?j``    possible
``i-j-P``  possible
=========  ===========

Sure links also count as possible (S ⊆ P). A hypothesis file uses the same syntax, but
every link in it is simply a link of the alignment A; its marks are ignored.

With counts summed over the corpus:

* precision = |A ∩ P| / |A|
* recall    = |A ∩ S| / |S|
* AER       = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, List, Optional, Set, Tuple

from rnmt.errors import UserError
from rnmt.evaluation.textfiles import check_same_length, read_lines

Link = Tuple[int, int]  # (source position, target position), both 0-based

_SURE_OR_MARKED = re.compile(r"(\d+)-(\d+)(?:-([SP]))?")
_POSSIBLE = re.compile(r"(\d+)\?(\d+)")


@dataclass(frozen=True)
class SentenceAlignment:
    """The links of one sentence; ``possible`` already includes every sure link."""

    sure: FrozenSet[Link]
    possible: FrozenSet[Link]


@dataclass(frozen=True)
class AlignmentScores:
    """Corpus-level alignment quality with the counts it is computed from.

    A ratio whose denominator is zero (no hypothesis links, no sure links) is ``None``.
    """

    sentences: int
    hyp_links: int  # |A|
    sure_links: int  # |S|
    possible_links: int  # |P|, sure links included
    hyp_and_sure: int  # |A ∩ S|
    hyp_and_possible: int  # |A ∩ P|

    @property
    def precision(self) -> Optional[float]:
        """|A ∩ P| / |A|."""
        return self.hyp_and_possible / self.hyp_links if self.hyp_links else None

    @property
    def recall(self) -> Optional[float]:
        """|A ∩ S| / |S|."""
        return self.hyp_and_sure / self.sure_links if self.sure_links else None

    @property
    def aer(self) -> Optional[float]:
        """1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)."""
        total = self.hyp_links + self.sure_links
        if total == 0:
            return None
        return 1.0 - (self.hyp_and_sure + self.hyp_and_possible) / total


def _readable(match: re.Match[str]) -> bool:
    """The link's two indices are ASCII numbers int() reads (not 5,000 digits, not other
    scripts' digits, which ``\\d`` also matches)."""
    return all(g.isascii() and len(g) <= 9 for g in match.group(1, 2))


def parse_links(line: str, where: str = "<input>") -> SentenceAlignment:
    """Parse one line of Pharaoh links; ``where`` (``file:line``) names it in errors."""
    sure: Set[Tuple[int, int]] = set()
    possible: Set[Tuple[int, int]] = set()
    for token in line.split():
        match = _SURE_OR_MARKED.fullmatch(token)
        if match and _readable(match):
            link = (int(match.group(1)), int(match.group(2)))
            (possible if match.group(3) == "P" else sure).add(link)
            continue
        match = _POSSIBLE.fullmatch(token)
        if match and _readable(match):
            possible.add((int(match.group(1)), int(match.group(2))))
            continue
        raise UserError(f"{where}: malformed alignment link {token!r}; "
                        "expected i-j, i?j, i-j-S or i-j-P with 0-based positions")
    return SentenceAlignment(frozenset(sure), frozenset(possible | sure))


def read_alignments(path: str | Path) -> List[SentenceAlignment]:
    """Read a Pharaoh alignment file, one `SentenceAlignment` per line."""
    return [parse_links(line, f"{path}:{k}") for k, line in enumerate(read_lines(path), 1)]


def score_alignments(hypothesis: List[SentenceAlignment],
                     gold: List[SentenceAlignment]) -> AlignmentScores:
    """Sum the link counts over sentences and return the corpus scores.

    Every link of a hypothesis sentence counts as a link of A, whatever its mark.
    """
    if len(hypothesis) != len(gold):
        raise ValueError(f"{len(hypothesis)} hypothesis sentences but {len(gold)} gold sentences")
    counts = [0, 0, 0, 0, 0]
    for hyp, ref in zip(hypothesis, gold):
        links = hyp.possible
        counts[0] += len(links)
        counts[1] += len(ref.sure)
        counts[2] += len(ref.possible)
        counts[3] += len(links & ref.sure)
        counts[4] += len(links & ref.possible)
    return AlignmentScores(len(gold), *counts)


def evaluate_alignment_files(hyp_path: str | Path, gold_path: str | Path) -> AlignmentScores:
    """Score a hypothesis alignment file against a gold file with the same line count."""
    hyp = read_alignments(hyp_path)
    gold = read_alignments(gold_path)
    check_same_length(hyp_path, hyp, gold_path, gold)
    return score_alignments(hyp, gold)
