"""One test for a verdict's word, interval and p; a converged README states its regime."""

from __future__ import annotations

import numpy as np
import pytest

from rnmt.evaluation.significance import percentile_p_value
from rnmt.reproduce.regimes import regime_header
from rnmt.reproduce.report import SIGNIFICANT, _training_line


@pytest.mark.parametrize("shift", [-3.0, -1.99, -1.96, -1.9, -0.5, 0.0, 0.7, 1.95, 1.97, 2.5])
def test_p_is_below_the_level_exactly_when_the_interval_excludes_zero(shift: float):
    rng = np.random.default_rng(7)
    for n in (50, 200, 1000):
        diffs = rng.normal(shift, 1.0, size=n)
        low, high = np.percentile(diffs, [2.5, 97.5])  # as difference_interval reads its ends
        p = percentile_p_value(diffs)
        assert (p < SIGNIFICANT) == (low > 0 or high < 0), (shift, n, p, low, high)


def test_p_of_identical_outputs_is_one_and_of_a_clear_difference_is_one_over_n():
    assert percentile_p_value(np.zeros(100)) == 1.0
    assert percentile_p_value(np.full(100, 2.0)) == pytest.approx(0.01)
    assert percentile_p_value(np.full(100, -2.0)) == pytest.approx(0.01)


def _record(run: str, patience: int, precision: str, bf16: str) -> dict:
    return {"run": run, "recipe": {"train.patience": patience},
            "machine": {"cpu": "AMD EPYC", "cpu_bf16": bf16, "precision": precision}}


def test_one_regime_is_stated_and_a_mixed_one_named_with_its_runs():
    same = [_record("a.seed1", 8, "bf16 autocast", "avx512_bf16, no AMX"),
            _record("b.seed1", 8, "bf16 autocast", "avx512_bf16, no AMX")]
    mixed, lines = regime_header(same, {"patience": 8}, None)
    assert not mixed and "patience 8, bf16 autocast, AMD EPYC (avx512_bf16, no AMX)" in lines[0]

    other = same[:1] + [_record("b.seed1", 4, "fp32", "no bf16 instructions")]
    mixed, lines = regime_header(other, {"patience": 8}, None)
    assert mixed and lines[0].startswith("**Mixed regime**")
    for part in ("patience, precision and CPU class", "4 for b (seed 1)", "fp32 for b (seed 1)"):
        assert part in lines[0]


def test_the_training_line_opens_with_the_patience_the_records_stopped_under():
    settings = {"converge": True, "patience": 8, "dev_sentences": 0, "updates": 30000, "validate_every": 500,
                "plateau_patience": 2}
    records = [_record("a.seed1", 4, "fp32", ""), _record("a.seed2", 4, "fp32", "")]
    line = _training_line(settings, records)
    assert line.startswith("- **Training**: until dev BLEU has not improved for 4 validations")
    assert "raised to 8" in line
    line = _training_line(settings, records + [_record("b.seed1", 8, "fp32", "")])
    assert "4 validations in a row for the records of a.seed1, a.seed2; 8 validations" in line
