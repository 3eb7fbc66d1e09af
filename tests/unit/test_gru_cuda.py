"""The GPU paths of the GRU (rnmt/fast/gru_cuda.py) against the unit's own expressions.

On the CPU ``gru_cuda.use("everywhere")`` runs the same code with cuDNN's recurrent layer
(``torch._VF.gru`` has a CPU implementation) and a PyTorch expression of the fused cell's
arithmetic, which checks the mapping of rnmt's GRU onto cuDNN's (mirrored update gate,
bias placement, padding) without a GPU. tests/unit/test_on_device.py runs the real CUDA
kernels when pytest is given ``--device cuda``.
"""

from __future__ import annotations

import pytest
import torch

from rnmt import kernels
from rnmt.cells.gru import GRU
from rnmt.cells.runner import Bidirectional
from rnmt.config import load_config
from rnmt.fast import accelerate, gru_cuda
from tests.unit.test_models_zoo import PAPER_CONFIGS, batch, tiny_model

MASK = torch.tensor([[1] * 6, [1] * 3 + [0] * 3, [1] + [0] * 5, [1] * 5 + [0]], dtype=torch.bool)


def units(reset_bias: bool, seed: int = 0):
    torch.manual_seed(seed)
    fwd, bwd = accelerate(GRU(5, 7, reset_bias=reset_bias)), accelerate(GRU(5, 7, reset_bias=reset_bias))
    with torch.no_grad():
        for unit in (fwd, bwd):
            unit.bias.uniform_(-0.5, 0.5)  # biases start at zero: make their placement matter
    return fwd, bwd


def run(layer: Bidirectional, x: torch.Tensor, mask, mode):
    with gru_cuda.use(mode), kernels.use(False):
        out = layer(x, mask)
        loss = out.outputs.pow(2).sum() + 2 * out.last_fwd.sum() + out.last_bwd.pow(2).sum()
        grads = torch.autograd.grad(loss, [x, *layer.parameters()])
    return out, grads


@pytest.mark.parametrize("reset_bias", [True, False], ids=["bias-in-reset", "bias-on-input"])
@pytest.mark.parametrize("mask", [MASK, None], ids=["padded", "full"])
def test_the_cudnn_layer_computes_the_bidirectional_loop(reset_bias, mask):
    layer = accelerate(Bidirectional(*units(reset_bias)))
    x = torch.randn(4, 6, 5, requires_grad=True)
    expected, expected_grads = run(layer, x, mask, False)
    got, grads = run(layer, x, mask, "everywhere")
    for a, b in zip(got[:3], expected[:3]):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    if mask is not None:
        assert float(got.outputs[1, 3:].detach().abs().max()) == 0.0  # padding stays zero


@pytest.mark.parametrize("mode", ["last", "mean"])
@pytest.mark.parametrize("reset_bias", [True, False], ids=["bias-in-reset", "bias-on-input"])
def test_the_cudnn_layer_computes_the_cyclic_re_reading(reset_bias, mode):
    """Cseq2seq's re-reading of the source from a given state (eq. 7 / eq. 9), rows in any
    order of length: one cuDNN call against the step loop, values and gradients."""
    from rnmt.models.cseq2seq import cyclic_context

    unit, _ = units(reset_bias)
    mask = MASK[[1, 0, 3, 2]]  # not longest first
    px = unit.project_inputs(torch.randn(4, 6, 5)).detach().requires_grad_()
    state = torch.randn(4, 7, requires_grad=True)
    results = []
    for where in (False, "everywhere"):
        with gru_cuda.use(where), kernels.use(False):
            context = cyclic_context(unit, px, mask, state, mode)
            loss = context.pow(2).sum() + context.sum()
            # W_x (and an input bias) are not used: the projections are given
            results.append((context, torch.autograd.grad(loss, [px, state, *unit.parameters()], allow_unused=True)))
    (expected, expected_grads), (got, grads) = results
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    for a, b in zip(grads, expected_grads):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("reset_bias", [True, False], ids=["bias-in-reset", "bias-on-input"])
def test_the_fused_cell_computes_the_step(reset_bias):
    unit, _ = units(reset_bias)
    px = unit.project_inputs(torch.randn(4, 5)).detach().requires_grad_()
    h = torch.randn(4, 7, requires_grad=True)
    wrt = [px, h, unit.weight_h] + ([unit.bias] if reset_bias else [])  # else the bias is inside px
    with kernels.use(False):
        with gru_cuda.use(False):
            expected = unit.step(px, h)
            expected_grads = torch.autograd.grad(expected.pow(2).sum(), wrt)
        with gru_cuda.use("everywhere"):
            got = unit.step(px, h)
            grads = torch.autograd.grad(got.pow(2).sum(), wrt)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    for a, b in zip(grads, expected_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_a_mask_with_gaps_or_an_empty_sentence_falls_back_to_the_loop():
    layer = accelerate(Bidirectional(*units(True)))
    x = torch.randn(3, 4, 5)
    gaps = torch.tensor([[1, 0, 1, 1], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    empty = torch.tensor([[1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    with gru_cuda.use("everywhere"):
        assert gru_cuda.run_bidirectional(layer.fwd, layer.bwd, x, gaps) is None
        assert gru_cuda.run_bidirectional(layer.fwd, layer.bwd, x, empty) is None
        with torch.no_grad():
            got = layer(x, gaps)
    with gru_cuda.use(False), torch.no_grad():
        expected = layer(x, gaps)
    torch.testing.assert_close(got.outputs, expected.outputs)


def test_the_cpu_keeps_its_own_path_and_units_the_gpu_cannot_take_are_left_alone():
    unit, other = units(True)
    x, h = torch.randn(2, 5), torch.zeros(2, 7)
    assert not gru_cuda.step_applies(unit, unit.project_inputs(x), h)  # default: CUDA tensors only
    assert not gru_cuda.bidirectional_applies(unit, other, x.unsqueeze(1))
    with gru_cuda.use("everywhere"):
        assert gru_cuda.step_applies(unit, unit.project_inputs(x), h)
        assert not gru_cuda.step_applies(accelerate(GRU(5, 7, layer_norm=True)), x, h)  # gate layer norm
        dropped = accelerate(GRU(5, 7, dropout=0.2)).train()
        assert not gru_cuda.step_applies(dropped, x, h)  # candidate dropout in training
        assert gru_cuda.step_applies(dropped.eval(), x, h)
    with pytest.raises(ValueError, match="everywhere"):
        with gru_cuda.use("gpu"):
            pass


# configs with plain GRUs (layer-normalised ones keep their own kernels: the GPU paths decline them)
def _plain_gru(path) -> bool:
    """The resolved config (bases included) has recurrent GRUs without gate layer norm (the
    Transformer's `model.cell` is the default, read by no layer)."""
    model = load_config(path).model
    return model.arch != "transformer" and "gru" in (model.cell, model.enc_cell) and not model.layer_norm


GRU_CONFIGS = [p for p in PAPER_CONFIGS if _plain_gru(p)]


@pytest.mark.parametrize("path", GRU_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_whole_models_score_and_learn_the_same_through_the_gpu_paths(path, monkeypatch):
    """Every paper config with GRUs, run through the GPU paths' code on the CPU: the same
    scores and gradients as through the units' expressions (the GPU tests compare the real
    CUDA kernels with the CPU in tests/unit/test_on_device.py)."""
    taken = []
    for name in ("fused_step", "run_bidirectional", "run_over_source"):
        original = getattr(gru_cuda, name)
        monkeypatch.setattr(gru_cuda, name, lambda *a, _f=original, _n=name: taken.append(_n) or _f(*a))

    model = tiny_model(path).train()
    for m in model.modules():  # the same dropout draws either way are not guaranteed: none
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    src, src_mask, tgt_in = batch()
    results = []
    for mode in (False, "everywhere"):
        with gru_cuda.use(mode), kernels.use(False):
            model.zero_grad()
            scores = torch.log_softmax(model(src, src_mask, tgt_in).float(), -1)
            scores.logsumexp(-1).sum().backward()
            results.append((scores.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                                               if p.grad is not None}))
    (expected, expected_grads), (got, grads) = results
    assert taken, "the GPU paths were not taken"
    if path.stem.startswith(("cseq2seq1", "cseq2seq2")):
        assert "run_over_source" in taken, "the cyclic re-reading did not take cuDNN"
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert grads.keys() == expected_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], expected_grads[name], atol=1e-5, rtol=1e-4, msg=name)
