"""Which distilled pairs a student trains on.

A teacher's output for a training source is dropped when it is

- **empty** (a blank source, or a translation without a word);
- **looping**: some 4-gram occurs three or more times in it, the test of
  `rnmt.evaluation.repetition` that ``rnmt evaluate --repetition`` reports;
- **off in length**: its whitespace words over the source's fall outside
  ``[min_ratio, max_ratio]`` (a truncated or run-on translation);
- **unsure**: among the teacher's worst ``drop_worst`` percent by cross-entropy per subword
  (its own score on what it wrote; a high one marks a source it could not translate).

Each pair is counted under the first test it fails, in that order, so the counts add up to
the pairs dropped; the percentile is taken over the pairs the first three tests keep.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from rnmt.evaluation.repetition import LOOP_COUNT, ORDER

REASONS = ("empty", "looping", "length_ratio", "teacher_score")


def is_looping(line: str, order: int = ORDER, count: int = LOOP_COUNT) -> bool:
    """Whether some ``order``-gram of whitespace words occurs ``count`` times or more."""
    words = line.split()
    grams = Counter(tuple(words[i:i + order]) for i in range(len(words) - order + 1))
    return bool(grams) and max(grams.values()) >= count


def length_ratio(source: str, hypothesis: str) -> float:
    return len(hypothesis.split()) / max(len(source.split()), 1)


@dataclass
class FilterResult:
    kept: List[int]  # indices of the pairs kept, in order
    dropped: Dict[str, int] = field(default_factory=dict)  # reason -> pairs dropped for it first
    score_threshold: Optional[float] = None  # the cross-entropy above which pairs were dropped

    def counts(self, total: int) -> Dict[str, object]:
        return {"pairs": total, "kept": len(self.kept), "dropped": dict(self.dropped),
                "teacher_score_threshold": None if self.score_threshold is None else round(self.score_threshold, 4)}


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile by linear interpolation between the sorted values (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * pct / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def filter_pairs(sources: Sequence[str], decoded: Sequence[Tuple[str, Optional[float]]], min_ratio: float,
                 max_ratio: float, drop_worst: float) -> FilterResult:
    """Apply the tests of the module docstring to ``(hypothesis, cross-entropy)`` per source."""
    dropped = {reason: 0 for reason in REASONS}
    survivors: List[int] = []
    for i, (src, (hyp, _)) in enumerate(zip(sources, decoded)):
        if not src.strip() or not hyp.strip():
            dropped["empty"] += 1
        elif is_looping(hyp):
            dropped["looping"] += 1
        elif not min_ratio <= length_ratio(src, hyp) <= max_ratio:
            dropped["length_ratio"] += 1
        else:
            survivors.append(i)
    threshold: Optional[float] = None
    scores = {i: decoded[i][1] for i in survivors}
    known = [s for s in scores.values() if s is not None]
    if drop_worst > 0 and known:
        limit = threshold = percentile(known, 100.0 - drop_worst)
        kept = [i for i in survivors if (score := scores[i]) is not None and score <= limit]
        dropped["teacher_score"] = len(survivors) - len(kept)
        survivors = kept
    return FilterResult(kept=survivors, dropped=dropped, score_threshold=threshold)
