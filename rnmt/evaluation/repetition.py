"""Degenerate output: words looping within a line.

A model that has not learnt to track what it has translated writes "his own own own own"
or repeats a clause until the length limit. BLEU barely notices a few such lines, but a
system that produces them is not translating them, and a comparison that rests on its
score says little. Two figures per output, on whitespace tokens of each line:

- **looping lines**: lines in which some 4-gram occurs three times or more;
- **repeated 4-gram rate**: the share of a line's 4-grams that repeat one seen earlier in
  the same line, over all lines (natural text has a little: the Bible test references 0.34%).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Dict, Sequence

ORDER = 4
LOOP_COUNT = 3  # a 4-gram this often in one line makes the line a loop


@dataclass(frozen=True)
class Repetition:
    lines: int
    looping_lines: int
    repeated_ngram_rate: float  # percent of all 4-grams

    @property
    def looping_share(self) -> float:
        """Looping lines in percent of all lines."""
        return 100.0 * self.looping_lines / self.lines if self.lines else 0.0

    def to_dict(self) -> Dict[str, float]:
        return {**asdict(self), "looping_share": round(self.looping_share, 3),
                "repeated_ngram_rate": round(self.repeated_ngram_rate, 3)}


def repetition(lines: Sequence[str], order: int = ORDER) -> Repetition:
    """Looping lines and the repeated n-gram rate of ``lines`` (module docstring)."""
    looping, repeated, total = 0, 0, 0
    for line in lines:
        words = line.split()
        counts: Counter = Counter(tuple(words[i:i + order]) for i in range(len(words) - order + 1))
        grams = sum(counts.values())
        total += grams
        repeated += grams - len(counts)  # every occurrence after a 4-gram's first
        if counts and max(counts.values()) >= LOOP_COUNT:
            looping += 1
    return Repetition(lines=len(lines), looping_lines=looping,
                      repeated_ngram_rate=100.0 * repeated / total if total else 0.0)
