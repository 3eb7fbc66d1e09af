"""Minimum Bayes risk (MBR) decoding: each line's output chosen among its candidates by the
utility it is expected to have, not by its probability.

The decision rule (Kumar & Byrne 2004; Eikema & Aziz 2020 for samples as the evidence):

    y* = argmax over candidates h of  sum_j w_j * U(h, y_j)

where the y_j are the same candidates used as pseudo-references, ``U(h, y)`` is a sentence
metric of hypothesis ``h`` against reference ``y`` (chrF or BLEU, computed by sacrebleu),
and ``w_j`` estimates the model's probability of ``y_j``:

* candidates drawn by sampling are a Monte Carlo estimate of the model's distribution:
  each draw weighs the same (a sentence drawn twice counts twice);
* candidates from beam search are not a sample: each weighs its model probability
  ``exp(log p(y_j | x))``, renormalised over the list (Kumar & Byrne's n-best MBR).

The candidate with the highest expected utility is the choice; ties go to the earlier
candidate (the search's or sampler's own order). Identical candidates are scored once,
their weights summed. Freitag et al. (2023, "Epsilon sampling rocks") found epsilon samples
(`rnmt.search.sampling`, ``epsilon``) the best evidence for MBR with a neural metric; this
module takes any candidates.

Cost: N candidates need N^2 / 2 comparisons of character n-gram counts for chrF (each
candidate's counts extracted once, and a pair's matches shared by both directions), N^2
sentence BLEU computations for BLEU; measured in docs/translation.md ("Minimum Bayes risk").
"""

from __future__ import annotations

import math
from typing import Callable, List, Sequence, Tuple, Union

import numpy as np

# the utilities `choose` knows, as `rnmt translate --mbr` spells them
UTILITIES: Tuple[str, ...] = ("chrf", "bleu")


def chrf_matrix(texts: Sequence[str]) -> np.ndarray:
    """``U[i, j]``: sentence chrF (sacrebleu's defaults: character 6-grams, beta 2) of
    ``texts[i]`` against ``texts[j]`` as the reference.

    Each text's n-gram counts are extracted once, and a pair's match counts serve both
    directions (only the hypothesis and reference totals swap): the same numbers as
    ``CHRF().sentence_score(texts[i], [texts[j]])`` (a test holds them equal) at a sixth
    of its time for 32 candidates. sacrebleu's own extraction, matching and F-score are
    used: the metric is not re-implemented here."""
    from sacrebleu.metrics import CHRF

    metric = CHRF()
    grams = [metric._extract_reference_info([t])["ref_ngrams"][0] for t in texts]
    totals = [[sum(g.values()) for g in per_order] for per_order in grams]
    n = len(texts)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            forward: List[int] = []  # i as the hypothesis, j as the reference
            backward: List[int] = []  # j as the hypothesis, i as the reference
            for gi, gj, total_i, total_j in zip(grams[i], grams[j], totals[i], totals[j]):
                hyp_i, ref_j, match = metric._get_match_statistics(gi, gj)
                forward += [hyp_i, ref_j, match]
                # sacrebleu counts no hypothesis n-grams of an order the reference lacks
                backward += [total_j if gi else 0, total_i, match]
            out[i, j] = metric._compute_f_score(forward)
            out[j, i] = metric._compute_f_score(backward)
    return out


def bleu_matrix(texts: Sequence[str]) -> np.ndarray:
    """``U[i, j]``: sentence BLEU (sacrebleu's, 13a tokens, effective order) of ``texts[i]``
    against ``texts[j]`` as the reference."""
    from sacrebleu.metrics import BLEU

    metric = BLEU(effective_order=True)
    return np.array([[metric.sentence_score(h, [r]).score for r in texts] for h in texts])


_MATRICES: dict = {"chrf": chrf_matrix, "bleu": bleu_matrix}


def utility_matrix(texts: Sequence[str], utility: str) -> np.ndarray:
    if utility not in _MATRICES:
        raise ValueError(f"unknown MBR utility {utility!r}; known: {', '.join(UTILITIES)}")
    matrix: Callable[[Sequence[str]], np.ndarray] = _MATRICES[utility]
    return matrix(texts)


def evidence_weights(log_probs: Sequence[float], sampled: bool) -> np.ndarray:
    """Each candidate's weight as evidence: equal for samples, the renormalised model
    probability ``exp(log p)`` for a search's n-best (computed from the largest, so that
    long outputs' tiny probabilities do not all round to zero)."""
    if sampled or not log_probs:
        return np.full(len(log_probs), 1.0 / max(len(log_probs), 1))
    lp = np.array(log_probs, dtype=np.float64)
    if not np.isfinite(lp).any():
        return np.full(len(lp), 1.0 / len(lp))
    w = np.exp(lp - lp[np.isfinite(lp)].max())
    w[~np.isfinite(w)] = 0.0
    return w / w.sum()


def expected_utilities(texts: Sequence[str], weights: Union[Sequence[float], np.ndarray], utility: str) -> np.ndarray:
    """Each candidate's expected utility ``sum_j w_j U(i, j)``, the candidates (and their
    weights) merged by text first so that a repeated sentence is scored once."""
    unique: dict = {}
    for t, w in zip(texts, weights):
        unique[t] = unique.get(t, 0.0) + float(w)
    distinct = list(unique)
    expected = utility_matrix(distinct, utility) @ np.array([unique[t] for t in distinct])
    by_text = dict(zip(distinct, expected))
    return np.array([by_text[t] for t in texts])


def choose(texts: Sequence[str], log_probs: Sequence[float], sampled: bool, utility: str) -> Tuple[int, float]:
    """(the index of the candidate with the highest expected ``utility``, that expectation);
    the first of equals. One candidate is its own choice."""
    if not texts:
        raise ValueError("MBR needs at least one candidate")
    expected = expected_utilities(texts, evidence_weights(log_probs, sampled), utility)
    best = int(np.argmax(expected))  # the first maximum
    return best, float(expected[best]) if math.isfinite(expected[best]) else 0.0
