"""The unit micro-benchmark returns one row per unit with ratios to the GRUs."""

from __future__ import annotations

import pytest

from rnmt.bench import cells as bench
from rnmt.bench.cells import benchmark_cells, format_rows
from rnmt.errors import UserError


def test_benchmark_runs_every_unit_forward_and_backward():
    rows = benchmark_cells(["gru", "atr", "torch-gru"], batch=2, length=3, size=4, threads=1, repeats=1)
    assert [r["unit"] for r in rows] == ["gru", "atr", "torch-gru"]
    by_unit = {r["unit"]: r for r in rows}
    # Parameter counts from the units' equations at input = hidden = 4: the GRU's W, U (3 gates
    # each) and b; ATR's W_x, W_h and b; PyTorch's GRU with its two bias vectors.
    assert by_unit["gru"]["params"] == 3 * 4 * 4 + 3 * 4 * 4 + 3 * 4
    assert by_unit["atr"]["params"] == 4 * 4 + 4 * 4 + 4
    assert by_unit["torch-gru"]["params"] == 3 * 4 * 4 + 3 * 4 * 4 + 2 * 3 * 4
    assert all(r["ms"] > 0 and r["vs_gru"] > 0 and r["vs_torch_gru"] > 0 for r in rows)
    assert "torch-gru" in format_rows(rows)


def test_benchmark_times_round_robin_and_keeps_each_units_best_pass(monkeypatch):
    """With a scripted clock: the warm-up round is left out, a unit's time is its fastest
    timed pass, and the ratios divide by the reference units' times."""
    seconds = {"gru": [9.0, 0.004, 0.002], "atr": [9.0, 0.003, 0.006], "torch-gru": [9.0, 0.001, 0.001]}
    order = []

    def scripted_pass(module, run, x, mask):
        name = next(n for n, m in units.items() if m is module)
        order.append(name)
        return seconds[name].pop(0)

    units = {}
    real_unit_pass = bench._unit_pass

    def unit_pass(name, size):
        module, run = real_unit_pass(name, size)
        units[name] = module
        return module, run

    monkeypatch.setattr(bench, "_unit_pass", unit_pass)
    monkeypatch.setattr(bench, "_one_pass", scripted_pass)
    rows = {r["unit"]: r for r in benchmark_cells(list(seconds), batch=1, length=2, size=3, threads=1, repeats=2)}
    assert order == ["gru", "atr", "torch-gru"] * 3
    assert {n: r["ms"] for n, r in rows.items()} == pytest.approx({"gru": 2.0, "atr": 3.0, "torch-gru": 1.0})
    assert rows["atr"]["vs_gru"] == pytest.approx(1.5) and rows["gru"]["vs_torch_gru"] == pytest.approx(2.0)


def test_benchmark_without_gru_leaves_ratios_empty():
    rows = benchmark_cells(["atr"], batch=1, length=2, size=3, threads=1, repeats=1)
    assert rows[0]["vs_gru"] is None and rows[0]["vs_torch_gru"] is None


def test_benchmark_rejects_unknown_units():
    with pytest.raises(UserError, match="unknown unit 'gruu'"):
        benchmark_cells(["gruu"], batch=1, length=1, size=2, threads=1, repeats=1)
