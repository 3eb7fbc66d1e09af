"""benchmarks/onednn_products.py: its shape table times the three ways at every shape."""

from __future__ import annotations

import pytest

from rnmt import kernels
from tests.support import load_benchmark

bench = load_benchmark("onednn_products")


@pytest.mark.skipif(kernels.extension() is None, reason="needs the C++ kernels")
def test_the_shape_table_gives_a_rate_for_each_way_and_shape(monkeypatch, capsys):
    monkeypatch.setattr(bench, "SHAPES", [("small", 4, 16, 24), ("taller", 40, 16, 8)])
    monkeypatch.setattr(bench, "timed", lambda run, seconds=0.3: (run(), 1e-9)[1])
    bench.shape_table(rounds=1)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| small") or
            line.startswith("| taller")]
    assert len(rows) == 2
    for row in rows:
        rates = [float(cell) for cell in row.strip("|").split("|")[2:]]
        assert len(rates) == 3 and all(rate > 0 for rate in rates)
