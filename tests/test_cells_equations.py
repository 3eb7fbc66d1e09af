"""Each unit's step against the papers' equations, written out naively from the unit's weights."""

from __future__ import annotations

import pytest
import torch

from rnmt.cells import build
from rnmt.cells.base import LN_EPS

DX, D, B = 5, 4, 3
sig, tanh = torch.sigmoid, torch.tanh


def make(name, layer_norm=False, **options):
    torch.manual_seed(0)
    cell = build(name, DX, D, layer_norm=layer_norm, **options).to(torch.float64).eval()
    with torch.no_grad():
        for p in cell.parameters():
            p.add_(torch.rand_like(p) * 0.4 - 0.2)
    return cell


def inputs(state_size=D):
    torch.manual_seed(2)
    return torch.randn(B, DX, dtype=torch.float64), torch.randn(B, state_size, dtype=torch.float64)


def ln(z, norm, k):
    """LayerNorm of gate k of a GateNorm, written out: g * (z - mean) / sqrt(var + eps) + b."""
    gain = norm.gain[k * D : (k + 1) * D]
    offset = norm.offset[k * D : (k + 1) * D]
    mean = z.mean(-1, keepdim=True)
    var = ((z - mean) ** 2).mean(-1, keepdim=True)
    return gain * (z - mean) / torch.sqrt(var + LN_EPS) + offset


def check(cell, x, h, expected, expected_gates):
    new, gates = cell.step(cell.project_inputs(x), h, return_gates=True)
    torch.testing.assert_close(new, expected, rtol=0, atol=1e-5)
    assert set(gates) == set(expected_gates) == set(cell.gate_names)
    for k, v in expected_gates.items():
        torch.testing.assert_close(gates[k], v, rtol=0, atol=1e-5)


def test_gru_step_follows_dtmt_eq_6_to_9():
    cell = make("gru")
    m, b = cell.matrices(), cell.biases()
    x, h = inputs()
    r = sig(x @ m["W_r"] + h @ m["U_r"] + b["b_r"])
    z = sig(x @ m["W_z"] + h @ m["U_z"] + b["b_z"])
    cand = tanh(x @ m["W_h"] + r * (h @ m["U_h"] + b["b_h"]))
    check(cell, x, h, (1 - z) * h + z * cand, {"r": r, "z": z})


def test_gru_with_layer_norm_normalises_each_gate():
    cell = make("gru", layer_norm=True)
    m, b = cell.matrices(), cell.biases()
    x, h = inputs()
    r = sig(ln(x @ m["W_r"] + h @ m["U_r"], cell.gate_norm, 0))
    z = sig(ln(x @ m["W_z"] + h @ m["U_z"], cell.gate_norm, 1))
    cand = tanh(x @ m["W_h"] + r * (h @ m["U_h"] + b["b_h"]))
    check(cell, x, h, (1 - z) * h + z * cand, {"r": r, "z": z})
