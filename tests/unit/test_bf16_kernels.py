"""Under CPU bf16 autocast the fused kernels still run, in fp32 (`rnmt.precision`): their
outputs and gradients agree with full fp32 within bf16's rounding of the products."""

import pytest
import torch

from rnmt import kernels
from rnmt.config import ModelConfig, load_config
from rnmt.fast import accelerate
from tests.support import load_benchmark, needs_kernel

pytestmark = needs_kernel
BF16 = dict(device_type="cpu", dtype=torch.bfloat16)


def _cell(kind: str):
    from rnmt import cells

    torch.manual_seed(3)
    unit = {"gru": lambda: accelerate(cells.GRU(12, 24)),
            "gru-ln": lambda: accelerate(cells.GRU(12, 24, layer_norm=True)),
            "lgru": lambda: accelerate(cells.build("lgru", 12, 24, layer_norm=True)),
            "tgru": lambda: accelerate(cells.build("tgru", 12, 24, layer_norm=True))}[kind]()
    return unit.train()


def _unroll(cell, x, state):
    px = cell.project_inputs(x) if cell.input_size else None
    outs = []
    for t in range(x.size(0)):
        state = cell.step(px[t] if px is not None else None, state)
        outs.append(state)
    return torch.stack(outs)


@pytest.mark.parametrize("kind", ["gru", "gru-ln", "lgru", "tgru"])
def test_units_run_their_kernel_in_fp32_under_autocast(kind):
    amp = load_benchmark("amp_products")  # its FastPaths counts the kernels' calls
    cell = _cell(kind)
    x = torch.randn(6, 5, 12)
    state = torch.randn(5, 24) * 0.5
    ref = _unroll(cell, x, state)
    ref.square().sum().backward()
    ref_grads = [p.grad.clone() for p in cell.parameters()]
    cell.zero_grad()
    with amp.FastPaths() as counted, torch.autocast(**BF16):
        out = _unroll(cell, x, state)
    out.square().sum().backward()
    assert out.dtype == torch.float32  # the state stays fp32 from step to step
    fused = sum(n for name, n in counted.calls.items() if name.startswith("kernel"))
    assert fused == x.size(0)  # one fused forward per step
    assert (out - ref).abs().max() < 0.05  # bf16 products: about 3 significant digits
    for p, g in zip(cell.parameters(), ref_grads):
        assert torch.isfinite(p.grad).all()
        assert torch.nn.functional.cosine_similarity(p.grad.flatten(), g.flatten(), dim=0) > 0.99


def test_attention_keys_are_cast_once_and_scored_by_the_kernel():
    from rnmt.modules.attention import AdditiveAttention

    torch.manual_seed(4)
    att = accelerate(AdditiveAttention(16, 20))
    memory, query = torch.randn(3, 7, 20), torch.randn(3, 16)
    mask = torch.ones(3, 7, dtype=torch.bool)
    ref_ctx, ref_w = att(query, att.precompute(memory), memory, mask)
    with torch.autocast(**BF16):
        keys = att.precompute(memory)
        ctx, w = att(query, keys, memory, mask)
    assert keys.dtype == torch.float32
    assert (w.float() - ref_w).abs().max() < 0.02
    assert (ctx.float() - ref_ctx).abs().max() < 0.05


@pytest.mark.parametrize("config", ["cseq2seq/rnnsearch", "dtmt/dtmt4"])
def test_a_paper_model_trains_in_bf16_like_fp32(config):
    """One training pass of a small paper model: bf16 autocast's loss and gradients follow
    fp32's (the parity protocol, `rnmt reproduce bf16`, checks whole trainings)."""
    from rnmt.models import build_model

    cfg = load_config(config, ["model.emb_size=16", "model.hidden_size=32", "model.dropout=0.0",
                               "model.src_vocab_size=40", "model.tgt_vocab_size=40"]).model
    assert isinstance(cfg, ModelConfig)
    torch.manual_seed(1)
    model = build_model(cfg).train()
    src, tgt = torch.randint(4, 40, (4, 9)), torch.randint(4, 40, (4, 8))
    losses, grads = [], []
    for amp in (False, True):
        model.zero_grad()
        with torch.autocast(enabled=amp, **BF16):
            logits = model(src, src != 0, tgt[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tgt[:, 1:].flatten())
        loss.backward()
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert abs(losses[0] - losses[1]) < 0.02 * losses[0]
    assert torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0) > 0.99
    assert kernels.extension() is not None
