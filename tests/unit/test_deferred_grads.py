"""Recurrent weight gradients summed in one buffer per pass (rnmt/deferred_grads.py)
against plain autograd."""

import pytest
import torch

from rnmt import cells, deferred_grads
from rnmt.config import ModelConfig
from rnmt.fast import accelerate
from rnmt.fast import cells as fast_cells
from rnmt.models import build_model

ARCHS = {
    "rnnsearch": {},
    "rnnsearch-lstm": dict(arch="rnnsearch", cell="lstm"),
    "atr-rnnsearch": dict(arch="atr-rnnsearch", cell="atr"),
    "deep-rnnsearch": dict(arch="deep-rnnsearch", cell="atr", enc_layers=3, dec_layers=3),
    "seq2seq": dict(arch="seq2seq"),
    "cseq2seq1": dict(arch="cseq2seq1"),
    "cseq2seq2-sgru": dict(arch="cseq2seq2", options={"share_gru": True}),
    "dtmt": dict(arch="dtmt", cell="lgru", attention_heads=2, layer_norm=True,
                 options={"enc_depth": 2, "query_depth": 2, "dec_depth": 2}),
    "luong": dict(arch="luong", cell="lstm", options={"attention": "general"}),
}


def gradients(model, src, mask, tgt, deferred: bool):
    model.zero_grad(set_to_none=True)
    with deferred_grads.enabled(deferred):
        assert deferred_grads.is_enabled() is deferred
        logits = model(src, mask, tgt)
    torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1)).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def tiny_model_and_batch(name):
    """A training-mode model of ``ARCHS[name]`` at width 12 and a batch of 3 (seeded)."""
    options = {"arch": "rnnsearch", **ARCHS[name]}
    torch.manual_seed(0)
    model = build_model(ModelConfig(emb_size=8, hidden_size=12, **options), 30, 30).train()
    g = torch.Generator().manual_seed(3)
    src, tgt = torch.randint(4, 30, (3, 7), generator=g), torch.randint(4, 30, (3, 5), generator=g)
    return model, src, torch.ones(3, 7, dtype=torch.bool), tgt


def distance(grads, exact):
    """The norm of all parameters' gradient differences from ``exact``."""
    return torch.cat([(grads[n] - exact[n]).flatten() for n in exact]).norm()


@pytest.mark.parametrize("name", sorted(ARCHS))
def test_model_gradients_are_those_of_plain_autograd(name):
    model, src, mask, tgt = tiny_model_and_batch(name)
    mask[2, 5:] = False
    deferred = gradients(model, src, mask, tgt, True)
    plain = gradients(model, src, mask, tgt, False)
    assert deferred.keys() == plain.keys() and len(plain) > 5
    recurrent = [n for n in plain if n.endswith("weight_h")]
    assert recurrent, "the model has recurrent weights"
    for n in plain:
        torch.testing.assert_close(deferred[n], plain[n], atol=1e-6, rtol=1e-5, msg=n)


def test_a_step_loop_sums_weight_and_bias_gradients_once():
    torch.manual_seed(1)
    cell = accelerate(cells.GRU(4, 6))
    x = torch.randn(3, 5, 4)
    results = []
    for deferred in (True, False):
        cell.zero_grad(set_to_none=True)
        with deferred_grads.deferred_weight_grads(deferred):
            out, _, _ = cells.run_cell(cell, x, torch.ones(3, 5, dtype=torch.bool))
        out.square().sum().backward()
        results.append({n: p.grad.clone() for n, p in cell.named_parameters()})
    for n in results[1]:
        torch.testing.assert_close(results[0][n], results[1][n], atol=1e-6, rtol=1e-5, msg=n)


def test_a_second_backward_of_a_retained_graph_adds_the_same_gradient_again():
    torch.manual_seed(2)
    cell = accelerate(cells.GRU(4, 6))
    with deferred_grads.deferred_weight_grads():
        out, _, _ = cells.run_cell(cell, torch.randn(2, 4, 4), torch.ones(2, 4, dtype=torch.bool))
    loss = out.sum()
    loss.backward(retain_graph=True)
    once = cell.weight_h.grad.clone()
    loss.backward()
    torch.testing.assert_close(cell.weight_h.grad, 2 * once)


def test_the_scope_opens_only_for_training_passes_and_closes_after_errors():
    model = build_model(ModelConfig(arch="rnnsearch", emb_size=8, hidden_size=12), 30, 30)
    seen = []
    original = deferred_grads.step_product

    def spy(*args, **kwargs):
        seen.append(deferred_grads._open_scope() is not None)
        return original(*args, **kwargs)

    src, mask, tgt = torch.randint(4, 30, (2, 4)), torch.ones(2, 4, dtype=torch.bool), torch.randint(4, 30, (2, 3))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast_cells, "step_product", spy)
        model.train()
        model(src, mask, tgt)
        assert seen and all(seen)
        seen.clear()
        with torch.no_grad():
            model(src, mask, tgt)
        model.eval()
        model(src, mask, tgt)
        assert seen and not any(seen)
        model.train()
        with pytest.raises(IndexError):
            model(src, mask, torch.full((2, 3), 99))  # a target id outside the vocabulary
    assert deferred_grads._open_scope() is None


def test_a_training_pass_leaves_nothing_behind_for_the_garbage_collector():
    """The token's node refers to its collector; a collector that kept the token would make
    a reference cycle holding each pass's tensors until the cyclic collector runs."""
    import gc

    model = build_model(ModelConfig(arch="rnnsearch", emb_size=8, hidden_size=12), 30, 30).train()
    src, mask, tgt = torch.randint(4, 30, (2, 4)), torch.ones(2, 4, dtype=torch.bool), torch.randint(4, 30, (2, 3))
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):
            model(src, mask, tgt).sum().backward()
        alive = [o for o in gc.get_objects() if type(o) is deferred_grads.Collector]
    finally:
        gc.enable()
    assert alive == []


def test_the_switch_turns_model_scopes_off_within_its_block_only():
    model = build_model(ModelConfig(arch="rnnsearch", emb_size=8, hidden_size=12), 30, 30).train()
    seen = []
    src, mask, tgt = torch.randint(4, 30, (2, 4)), torch.ones(2, 4, dtype=torch.bool), torch.randint(4, 30, (2, 3))
    model.register_forward_pre_hook(lambda *_: seen.append(deferred_grads._open_scope() is not None))
    assert deferred_grads.is_enabled()
    with deferred_grads.enabled(False):
        model(src, mask, tgt)
        with deferred_grads.enabled(True):
            model(src, mask, tgt)
        assert not deferred_grads.is_enabled()
    model(src, mask, tgt)
    assert seen == [False, True, True] and deferred_grads.is_enabled()


@pytest.mark.parametrize("name", sorted(ARCHS))
def test_bf16_passes_defer_too_and_stay_near_fp32(name):
    """Under CPU bf16 autocast the scope's products run in bf16 and each weight's gradient
    is one product over the stacked steps: as close to fp32's as plain autocast autograd,
    whose per-step gradients add up in bf16."""
    model, src, mask, tgt = tiny_model_and_batch(name)
    exact = gradients(model, src, mask, tgt, True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        deferred = gradients(model, src, mask, tgt, True)
        plain = gradients(model, src, mask, tgt, False)
    assert deferred.keys() == exact.keys() == plain.keys()
    assert all(t.dtype == torch.float32 for t in deferred.values())

    scale = torch.cat([t.flatten() for t in exact.values()]).norm()
    assert distance(deferred, exact) < 0.03 * scale
    assert distance(deferred, exact) < 1.25 * distance(plain, exact) + 1e-3 * scale


@pytest.mark.parametrize("name", ["cseq2seq1", "rnnsearch"])
def test_products_made_as_the_steps_come_sum_to_the_same_gradients(name, monkeypatch):
    """A collector multiplies its operands every FLUSH_BYTES (the cyclic models gather
    about 90 MB a pass): with a product after every step the bf16 gradients stay as near
    fp32's as with one product at the end, and fp32's are those of plain autograd."""
    model, src, mask, tgt = tiny_model_and_batch(name)
    exact = gradients(model, src, mask, tgt, False)
    flushes = []
    flush = deferred_grads.Collector._flush
    monkeypatch.setattr(deferred_grads.Collector, "_flush", lambda self: flushes.append(1) or flush(self))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        at_end = gradients(model, src, mask, tgt, True)
    products_at_end = len(flushes)
    monkeypatch.setattr(deferred_grads, "FLUSH_BYTES", 1)  # a product per step
    with torch.autocast("cpu", dtype=torch.bfloat16):
        per_step = gradients(model, src, mask, tgt, True)
    assert len(flushes) - products_at_end > 4 * products_at_end > 0  # a weight's steps in many products
    fp32 = gradients(model, src, mask, tgt, True)
    for n in exact:
        torch.testing.assert_close(fp32[n], exact[n], atol=1e-6, rtol=1e-5, msg=n)

    scale = torch.cat([t.flatten() for t in exact.values()]).norm()
    assert distance(per_step, exact) < 1.5 * distance(at_end, exact) + 1e-3 * scale
