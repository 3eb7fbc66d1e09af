"""Weight-matrix and parameter counts of every unit (they make the papers' tables come out)."""

from __future__ import annotations

import pytest

from rnmt.cells import CELL_NAMES, build


def n_params(module):
    return sum(p.numel() for p in module.parameters())


# name -> (number of weight matrices, params(dx, d) without LN, params(dx, d) with LN)
def lgru_ln(x, d):
    return 3 * (x + d) * d + 2 * x * d + d * d + d + 3 * 2 * d  # DTMT section 1 of the spec


def tgru_ln(x, d):
    return 3 * d * d + d + 2 * 2 * d


EXPECTED = {
    "gru": (6, lambda x, d: 3 * x * d + 3 * d * d + 3 * d, lambda x, d: 3 * x * d + 3 * d * d + d + 2 * 2 * d),
    "lstm": (8, lambda x, d: 4 * x * d + 4 * d * d + 4 * d, lambda x, d: 4 * x * d + 4 * d * d + d + 3 * 2 * d),
    "srnn": (2, lambda x, d: x * d + d * d + d, lambda x, d: x * d + d * d + 2 * d),
    "atr": (2, lambda x, d: x * d + d * d + d, lambda x, d: x * d + d * d + d + 2 * 2 * d),
    "ran": (5, lambda x, d: 3 * x * d + 2 * d * d + 2 * d, lambda x, d: 3 * x * d + 2 * d * d + 2 * 2 * d),
    "lau": (9, lambda x, d: 5 * x * d + 4 * d * d + 4 * d, lgru_ln),
    "lgru": (9, lambda x, d: 5 * x * d + 4 * d * d + 4 * d, lgru_ln),
    "tgru": (3, lambda x, d: 3 * d * d + 3 * d, tgru_ln),
    # default block: L-GRU + 4 T-GRUs
    "transition": (
        9 + 4 * 3,
        lambda x, d: 5 * x * d + 4 * d * d + 4 * d + 4 * (3 * d * d + 3 * d),
        lambda x, d: lgru_ln(x, d) + 4 * tgru_ln(x, d),
    ),
}


def test_every_unit_has_expected_counts():
    assert set(EXPECTED) == set(CELL_NAMES)


def test_lgru_adds_three_matrices_to_the_gru():
    gru, lgru = build("gru", 5, 4).matrices(), build("lgru", 5, 4).matrices()
    assert len(lgru) - len(gru) == 3 and {"W_x", "W_xl", "W_hl"} <= set(lgru)


def test_each_tgru_adds_its_own_weights_to_a_block():
    one = n_params(build("transition", 5, 4, layer_norm=True, depth=1))
    three = n_params(build("transition", 5, 4, layer_norm=True, depth=3))
    assert three - one == 2 * tgru_ln(5, 4)


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


@pytest.mark.parametrize("name", ["gru", "lstm", "ran", "lau", "lgru", "tgru"])
@pytest.mark.parametrize("layer_norm", [False, True])
def test_named_biases_cover_the_bias_vector(name, layer_norm):
    """`biases()` names every block of the fused bias, and with gate layer norm only the
    candidate's bias remains (RAN, which has no candidate bias, then has none)."""
    cell = build(name, 5, 4, layer_norm=layer_norm)
    biases = cell.biases()
    if cell.bias is None:
        assert biases == {}
        return
    assert sum(b.numel() for b in biases.values()) == cell.bias.numel()
    assert all(b.shape == (4,) for b in biases.values())
    if layer_norm:
        assert list(biases) == [cell.bias_names[-1]]
