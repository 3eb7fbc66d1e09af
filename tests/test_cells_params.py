"""Weight-matrix and parameter counts of every unit (they make the papers' tables come out)."""

from __future__ import annotations

import pytest

from rnmt.cells import build


def n_params(module):
    return sum(p.numel() for p in module.parameters())


# name -> (number of weight matrices, params(dx, d) without LN, params(dx, d) with LN)
EXPECTED = {
    "gru": (6, lambda x, d: 3 * x * d + 3 * d * d + 3 * d, lambda x, d: 3 * x * d + 3 * d * d + d + 2 * 2 * d),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("dx,d", [(5, 4), (620, 1000)])
def test_matrix_and_parameter_counts(name, dx, d):
    n_mats, plain, with_ln = EXPECTED[name]
    cell = build(name, dx, d)
    mats = cell.matrices()
    assert len(mats) == n_mats
    assert n_params(cell) == plain(dx, d)
    assert n_params(build(name, dx, d, layer_norm=True)) == with_ln(dx, d)
    # The named matrices account for every weight; the rest are vectors (biases, LN).
    vectors = sum(p.numel() for p in cell.parameters() if p.dim() == 1)
    assert sum(m.numel() for m in mats.values()) + vectors == plain(dx, d)
