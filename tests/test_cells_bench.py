"""The unit micro-benchmark returns one row per unit with ratios to the GRUs."""

from __future__ import annotations

import pytest

from rnmt.bench.cells import benchmark_cells, format_rows
from rnmt.errors import UserError


def test_benchmark_rows_have_times_and_ratios():
    rows = benchmark_cells(["gru", "atr", "torch-gru"], batch=2, length=3, size=4, threads=1, repeats=1)
    assert [r["unit"] for r in rows] == ["gru", "atr", "torch-gru"]
    by_unit = {r["unit"]: r for r in rows}
    assert by_unit["gru"]["vs_gru"] == 1.0 and by_unit["torch-gru"]["vs_torch_gru"] == 1.0
    assert by_unit["atr"]["vs_gru"] == pytest.approx(by_unit["atr"]["ms"] / by_unit["gru"]["ms"])
    assert by_unit["atr"]["params"] == 4 * 4 + 4 * 4 + 4
    assert all(r["ms"] > 0 for r in rows)
    assert "torch-gru" in format_rows(rows)


def test_benchmark_without_gru_leaves_ratios_empty():
    rows = benchmark_cells(["atr"], batch=1, length=2, size=3, threads=1, repeats=1)
    assert rows[0]["vs_gru"] is None and rows[0]["vs_torch_gru"] is None


def test_benchmark_rejects_unknown_units():
    with pytest.raises(UserError, match="unknown unit 'gruu'"):
        benchmark_cells(["gruu"], batch=1, length=1, size=2, threads=1, repeats=1)
