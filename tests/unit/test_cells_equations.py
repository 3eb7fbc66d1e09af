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


def test_gru_of_dl4mt_gru_layer_adds_the_candidate_bias_outside_the_reset():
    """reset_bias=False: h~ = tanh(W_h x + b_h + r * (U_h h)), dl4mt's gru_layer."""
    cell = make("gru", reset_bias=False)
    m, b = cell.matrices(), cell.biases()
    x, h = inputs()
    r = sig(x @ m["W_r"] + h @ m["U_r"] + b["b_r"])
    z = sig(x @ m["W_z"] + h @ m["U_z"] + b["b_z"])
    cand = tanh(x @ m["W_h"] + b["b_h"] + r * (h @ m["U_h"]))
    expected = (1 - z) * h + z * cand
    check(cell, x, h, expected, {"r": r, "z": z})
    inside = make("gru")
    assert not torch.allclose(inside.step(inside.project_inputs(x), h), expected)  # the placement matters
    # float32: the fused C++ step (and its autograd node) computes the same unit.
    cell32 = cell.to(torch.float32)
    x32, h32 = x.float().requires_grad_(), h.float()
    cell32.train()
    fused = cell32.step(cell32.project_inputs(x32), h32)
    torch.testing.assert_close(fused, expected.float(), rtol=0, atol=1e-5)
    fused.sum().backward()
    assert cell32.bias.grad is not None and x32.grad is not None


def test_dl4mt_models_put_the_bias_outside_except_in_the_conditional_unit():
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    for arch, outside, inside in (("rnnsearch", ["encoder.fwd", "encoder.bwd", "unit1"], ["unit2"]),
                                  ("cseq2seq1", ["encoder.fwd", "encoder.bwd", "unit1", "reader"], ["unit2"]),
                                  ("cseq2seq2", ["encoder", "unit1"], ["unit2"]),
                                  ("seq2seq", ["encoder", "unit1"], ["unit2"])):
        model = build_model(ModelConfig(arch=arch, cell="gru", emb_size=6, hidden_size=8), 20, 20)
        units = dict(model.named_modules())
        assert all(units[n].input_bias for n in outside), arch
        assert not any(units[n].input_bias for n in inside), arch
    dtmt = build_model(ModelConfig(arch="dtmt", cell="gru", emb_size=8, hidden_size=8, attention_heads=2), 20, 20)
    assert not any(getattr(m, "input_bias", False) for m in dtmt.modules())  # DTMT eq. 7: inside


def test_gru_with_layer_norm_normalises_each_gate():
    cell = make("gru", layer_norm=True)
    m, b = cell.matrices(), cell.biases()
    x, h = inputs()
    r = sig(ln(x @ m["W_r"] + h @ m["U_r"], cell.gate_norm, 0))
    z = sig(ln(x @ m["W_z"] + h @ m["U_z"], cell.gate_norm, 1))
    cand = tanh(x @ m["W_h"] + r * (h @ m["U_h"] + b["b_h"]))
    check(cell, x, h, (1 - z) * h + z * cand, {"r": r, "z": z})


@pytest.mark.parametrize("layer_norm", [False, True])
def test_lstm_step_follows_survey_section_2_3(layer_norm):
    cell = make("lstm", layer_norm)
    m, b = cell.matrices(), cell.biases()
    x, state = inputs(2 * D)
    h, c = state[:, :D], state[:, D:]

    def gate(k, name):
        pre = x @ m[f"W_{name}"] + h @ m[f"U_{name}"]
        return sig(ln(pre, cell.gate_norm, k)) if layer_norm else sig(pre + b[f"b_{name}"])

    i, f, o = gate(0, "i"), gate(1, "f"), gate(2, "o")
    c_tilde = tanh(x @ m["W_c"] + h @ m["U_c"] + b["b_c"])
    c_new = f * c + i * c_tilde
    h_new = o * tanh(c_new)
    check(cell, x, state, torch.cat([h_new, c_new], 1), {"i": i, "f": f, "o": o})
    assert torch.equal(cell.output(torch.cat([h_new, c_new], 1)), h_new)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_srnn_step_follows_elman_eq_1(layer_norm):
    cell = make("srnn", layer_norm)
    m = cell.matrices()
    x, h = inputs()
    pre = x @ m["W"] + h @ m["U"]
    expected = tanh(ln(pre, cell.norm, 0)) if layer_norm else tanh(pre + cell.bias)
    check(cell, x, h, expected, {})


def test_atr_step_follows_atr_eq_6_to_9():
    cell = make("atr")
    m = cell.matrices()
    x, h = inputs()
    p = x @ m["W_x"]
    q = h @ m["W_h"] + cell.bias
    i, f = sig(p + q), sig(p - q)  # eq. 8 with the authors' sign correction
    check(cell, x, h, i * p + f * h, {"i": i, "f": f})


def test_atr_with_layer_norm_normalises_p_and_q_separately():
    cell = make("atr", layer_norm=True)
    m = cell.matrices()
    x, h = inputs()
    p = ln(x @ m["W_x"], cell.norm_p, 0)
    q = ln(h @ m["W_h"], cell.norm_q, 0) + cell.bias
    i, f = sig(p + q), sig(p - q)
    check(cell, x, h, i * p + f * h, {"i": i, "f": f})


@pytest.mark.parametrize("activation", ["identity", "tanh"])
@pytest.mark.parametrize("layer_norm", [False, True])
def test_ran_step_follows_lee_et_al(activation, layer_norm):
    cell = make("ran", layer_norm, activation=activation)
    m, b = cell.matrices(), cell.biases()
    x, c = inputs()
    g = tanh if activation == "tanh" else (lambda v: v)
    h = g(c)
    c_tilde = x @ m["W_cx"]
    i_pre = h @ m["W_ih"] + x @ m["W_ix"]
    f_pre = h @ m["W_fh"] + x @ m["W_fx"]
    if layer_norm:
        i, f = sig(ln(i_pre, cell.gate_norm, 0)), sig(ln(f_pre, cell.gate_norm, 1))
    else:
        i, f = sig(i_pre + b["b_i"]), sig(f_pre + b["b_f"])
    c_new = i * c_tilde + f * c
    check(cell, x, c, c_new, {"i": i, "f": f})
    torch.testing.assert_close(cell.output(c_new), g(c_new))


def three_gates(cell, x, h, names, layer_norm):
    m, b = cell.matrices(), cell.biases()
    out = []
    for k, g in enumerate(names):
        pre = x @ m[f"W_x{g}"] + h @ m[f"W_h{g}"]
        out.append(sig(ln(pre, cell.gate_norm, k)) if layer_norm else sig(pre + b[f"b_{g}"]))
    return out


@pytest.mark.parametrize("layer_norm", [False, True])
def test_lau_step_follows_wang_et_al(layer_norm):
    cell = make("lau", layer_norm)
    m, b = cell.matrices(), cell.biases()
    x, h = inputs()
    r, z, g = three_gates(cell, x, h, "rzg", layer_norm)
    cand = tanh(x @ m["W_xh"] + r * (h @ m["W_hh"] + b["b_h"]))
    expected = ((1 - z) * h + z * cand) * (1 - g) + g * (x @ m["W_x"])
    check(cell, x, h, expected, {"r": r, "z": z, "g": g})


@pytest.mark.parametrize("layer_norm", [False, True])
def test_lgru_step_follows_dtmt_eq_14_to_16(layer_norm):
    cell = make("lgru", layer_norm)
    m, b = cell.matrices(), cell.biases()
    x, h = inputs()
    r, z, l = three_gates(cell, x, h, "rzl", layer_norm)
    cand = tanh(x @ m["W_xh"] + r * (h @ m["W_hh"] + b["b_h"])) + l * (x @ m["W_x"])
    check(cell, x, h, (1 - z) * h + z * cand, {"r": r, "z": z, "l": l})


def tgru_naive(cell, h, layer_norm):
    m, b = cell.matrices(), cell.biases()
    if layer_norm:
        r, z = sig(ln(h @ m["W_hr"], cell.gate_norm, 0)), sig(ln(h @ m["W_hz"], cell.gate_norm, 1))
    else:
        r, z = sig(h @ m["W_hr"] + b["b_r"]), sig(h @ m["W_hz"] + b["b_z"])
    cand = tanh(r * (h @ m["W_hh"] + b["b_h"]))
    return (1 - z) * h + z * cand, r, z


@pytest.mark.parametrize("layer_norm", [False, True])
def test_tgru_step_follows_dtmt_eq_10_to_13(layer_norm):
    cell = make("tgru", layer_norm)
    x, h = inputs()
    expected, r, z = tgru_naive(cell, h, layer_norm)
    check(cell, x, h, expected, {"r": r, "z": z})


@pytest.mark.parametrize("bottom", ["lgru", "gru", "lau"])
def test_transition_block_runs_bottom_then_each_tgru(bottom):
    cell = make("transition", True, bottom=bottom, depth=2)
    x, h = inputs()
    s, bottom_gates = cell.bottom.step(cell.bottom.project_inputs(x), h, return_gates=True)
    expected_gates = {f"bottom.{k}": v for k, v in bottom_gates.items()}
    for k, tgru in enumerate(cell.transitions):
        s, r, z = tgru_naive(tgru, s, True)
        expected_gates.update({f"t{k + 1}.r": r, f"t{k + 1}.z": z})
    check(cell, x, h, s, expected_gates)


@pytest.mark.parametrize("bottom", ["lgru", "gru", "lau"])
def test_transition_block_with_depth_0_equals_its_bottom_unit(bottom):
    from rnmt.cells import run_cell

    block = make("transition", True, bottom=bottom, depth=0)
    alone = build(bottom, DX, D, layer_norm=True).to(torch.float64)
    alone.load_state_dict({k.removeprefix("bottom."): v for k, v in block.state_dict().items()})
    torch.manual_seed(4)
    x = torch.randn(2, 3, DX, dtype=torch.float64)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    torch.testing.assert_close(run_cell(block, x, mask)[0], run_cell(alone, x, mask)[0], rtol=0, atol=0)


def test_transition_rejects_a_bottom_it_cannot_carry():
    from rnmt.errors import UserError

    with pytest.raises(UserError, match="option 'bottom'.*lgru"):
        build("transition", 4, 4, bottom="lstm")
