"""Paired bootstrap resampling (Koehn, 2004) through sacrebleu's `PairedTest`.

The first system is the baseline. For every metric, each system gets its bootstrap mean
and 95% confidence interval, and every other system gets the p-value of the paired
bootstrap test against the baseline, exactly as ``sacrebleu --paired-bs`` reports them.

One deliberate exception: a system whose output is identical to the baseline's, line for
line, gets p = 1.0. sacrebleu counts resampled differences *strictly greater* than the
observed one; with identical outputs every difference is exactly zero, none is greater,
and its formula returns 1/(n+1), which would read as a significant difference where
there is none.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, cast

from sacrebleu.significance import PairedTest

from rnmt.errors import UserError
from rnmt.evaluation.metrics import References, make_metric

DEFAULT_SEED = 12345  # sacrebleu's own default, so unseeded runs match the console script
# sacrebleu draws every resample's indices at once (samples x sentences int64s: 10**6 samples
# of a 3,000-line test set are 24 GB); the literature uses 1,000-10,000
MAX_BOOTSTRAP = 100_000


@dataclass(frozen=True)
class BootstrapResult:
    """One system's score on one metric, with its bootstrap statistics."""

    metric: str  # sacrebleu's metric name, e.g. "BLEU", "chrF2"
    score: float  # the score on the full test set
    mean: float  # mean over bootstrap samples
    ci: float  # half-width of the 95% interval, as sacrebleu reports it ("mean ± ci")
    p_value: Optional[float]  # against the baseline; None for the baseline itself

    @property
    def low(self) -> float:
        """Lower end of the 95% confidence interval."""
        return self.mean - self.ci

    @property
    def high(self) -> float:
        """Upper end of the 95% confidence interval."""
        return self.mean + self.ci


@contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """Temporarily set the seed sacrebleu reads from its environment variable.

    `PairedTest` takes its seed only from ``SACREBLEU_SEED``; setting it around the call
    keeps the rest of the process untouched.
    """
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if old is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_bootstrap(systems: Sequence[Tuple[str, Sequence[str]]], references: References,
                     metrics: Sequence[str] = ("bleu", "chrf"), n_samples: int = 1000,
                     seed: int = DEFAULT_SEED, tokenize: str = "13a", lowercase: bool = False
                     ) -> Tuple[Dict[str, str], Dict[str, Dict[str, BootstrapResult]]]:
    """Run the paired bootstrap test of every system against the first one.

    ``systems`` is a list of ``(name, hypotheses)``; ``metrics`` are keys of
    `rnmt.evaluation.metrics.METRICS`. Returns ``(signatures, results)`` where
    ``signatures[metric_key]`` is sacrebleu's signature (including sample count and seed)
    and ``results[system_name][metric_key]`` is a `BootstrapResult`.
    """
    if not 1 <= n_samples <= MAX_BOOTSTRAP:
        raise UserError(f"--bootstrap must be a number of samples from 1 to {MAX_BOOTSTRAP:,}, got {n_samples}")
    if seed < 1:
        # sacrebleu treats a seed of 0 as "no seed" for the compared systems, which would
        # silently make the test irreproducible.
        raise UserError(f"--seed must be a positive integer, got {seed}")
    if not systems:
        raise UserError("paired bootstrap needs at least one system")
    refs = [list(r) for r in references]
    metric_objects = {key: make_metric(key, tokenize, lowercase, references=refs)
                      for key in metrics}
    named: List[Tuple[str, Sequence[str]]] = [(name, list(hyps)) for name, hyps in systems]
    with _sacrebleu_seed(seed):
        # references=None: each metric already caches the reference statistics.
        test = PairedTest(named, metric_objects, references=None, test_type="bs",
                          n_samples=n_samples)
        signatures, table = test()
    # PairedTest renames its metric keys to the scores' names ("chrF2"); map them back.
    names_to_keys = {name: key for key, name in zip(metrics, test.metrics.keys())}
    baseline = named[0][1]
    results: Dict[str, Dict[str, BootstrapResult]] = {name: {} for name, _ in named}
    for metric_name, column in table.items():
        if metric_name == "System":
            continue
        key = names_to_keys[metric_name]
        for (name, hyps), res in zip(named, cast(List[Any], column)):  # sacrebleu's Result objects
            p_value = res.p_value
            if p_value is not None and hyps == baseline:
                p_value = 1.0  # see the module docstring
            results[name][key] = BootstrapResult(
                metric=metric_name, score=float(res.score), mean=float(res.mean),
                ci=float(res.ci), p_value=None if p_value is None else float(p_value))
    sig_by_key = {names_to_keys[name]: str(sig) for name, sig in signatures.items()}
    return sig_by_key, results


@dataclass(frozen=True)
class Difference:
    """Score(a) - score(b) on the full test set, with its paired bootstrap interval."""

    observed: float
    low: float  # the interval's ends: percentiles of the resampled differences
    high: float
    level: float  # e.g. 0.95
    # Two-sided, from the same resamples as the interval (`percentile_p_value`): below
    # 1 - level exactly when the interval excludes 0, so the word a verdict reads from the
    # interval and the p shown beside it never disagree.
    p_value: float = 1.0

    def as_list(self) -> List[float]:
        return [round(self.low, 4), round(self.high, 4)]


def difference_interval(hyps_a: Sequence[str], hyps_b: Sequence[str], references: Sequence[str],
                        metric: str = "bleu", n_samples: int = 1000, seed: int = DEFAULT_SEED,
                        level: float = 0.95) -> Difference:
    """The paired bootstrap interval of ``metric(a) - metric(b)`` (Koehn, 2004).

    Both systems are scored on the same resampled sets of test sentences, drawn as
    sacrebleu's paired test draws them (numpy's default generator seeded with ``seed``, one
    draw of all indices), so the differences are the ones behind its p-values. The interval
    is the central ``level`` share of the resampled differences. An equivalence claim asks
    for exactly this: not "is the difference significant" but "how large can it be".
    """
    import numpy as np

    if not 1 <= n_samples <= MAX_BOOTSTRAP:
        raise UserError(f"bootstrap needs a number of samples from 1 to {MAX_BOOTSTRAP:,}, got {n_samples}")
    if not len(hyps_a) == len(hyps_b) == len(references):
        raise UserError(f"difference_interval: {len(hyps_a)} and {len(hyps_b)} hypotheses for "
                        f"{len(references)} references")
    scorer = make_metric(metric, references=[list(references)])
    # sacrebleu's sufficient statistics per sentence (what its own bootstrap sums), so a
    # resampled corpus score costs one sum instead of a re-tokenisation.
    stats_a = np.array(scorer._extract_corpus_statistics(list(hyps_a), None), dtype="float64")
    stats_b = np.array(scorer._extract_corpus_statistics(list(hyps_b), None), dtype="float64")
    rng = np.random.default_rng(seed)
    idxs = rng.choice(len(references), size=(n_samples, len(references)), replace=True)

    def score(stats) -> float:
        return float(scorer._compute_score_from_stats(list(stats)).score)

    diffs = np.array([score(stats_a[i].sum(0)) - score(stats_b[i].sum(0)) for i in idxs])
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    observed = score(stats_a.sum(0)) - score(stats_b.sum(0))
    return Difference(observed=observed, low=float(low), high=float(high), level=level,
                      p_value=percentile_p_value(diffs))


def percentile_p_value(diffs: Any) -> float:  # any 1-D array-like of floats
    """Two-sided p-value of "no difference" from resampled differences, by inverting the
    percentile interval: twice the share of the distribution (numpy's linear percentiles,
    as `difference_interval` reads its ends) that lies beyond 0. So p < 1 - level exactly
    when the central ``level`` interval excludes 0. No resample beyond 0 gives 1/n, the
    smallest share n resamples can show; all of them at 0 (identical outputs) give 1."""
    import numpy as np

    s = np.sort(np.asarray(diffs, dtype="float64"))
    n = len(s)
    if n < 2:
        return 1.0

    def share_up_to_zero() -> float:  # sup{u: Q(u) <= 0}, Q the linear percentile function
        if s[0] > 0:
            return 0.0
        if s[-1] <= 0:
            return 1.0
        j = int(np.searchsorted(s, 0.0, side="right")) - 1  # last s[j] <= 0
        return (j + (-s[j]) / (s[j + 1] - s[j])) / (n - 1)

    def share_from_zero() -> float:  # 1 - inf{u: Q(u) >= 0}
        if s[-1] < 0:
            return 0.0
        if s[0] >= 0:
            return 1.0
        i = int(np.searchsorted(s, 0.0, side="left"))  # first s[i] >= 0
        return 1.0 - ((i - 1) + (-s[i - 1]) / (s[i] - s[i - 1])) / (n - 1)

    p = 2 * min(share_up_to_zero(), share_from_zero())
    return float(min(1.0, max(p, 1.0 / n)))
