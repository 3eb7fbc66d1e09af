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
from rnmt.evaluate.metrics import References, make_metric

DEFAULT_SEED = 12345  # sacrebleu's own default, so unseeded runs match the console script


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
    `rnmt.evaluate.metrics.METRICS`. Returns ``(signatures, results)`` where
    ``signatures[metric_key]`` is sacrebleu's signature (including sample count and seed)
    and ``results[system_name][metric_key]`` is a `BootstrapResult`.
    """
    if n_samples < 1:
        raise UserError(f"--bootstrap must be a positive number of samples, got {n_samples}")
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
