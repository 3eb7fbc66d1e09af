"""Every architecture behind the one model interface, at tiny sizes.

For each system: teacher-forced ``forward`` equals a loop of incremental ``step`` calls,
a sentence's scores do not depend on the padding around it, beam search runs, and a
gradient reaches every parameter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rnmt import cells
from rnmt.config import load_config
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.search.beam import beam_search
from tests.support import REPO

PAPER_CONFIGS = sorted((REPO / "configs" / "papers").glob("*/*.yaml"))
SRC_V, TGT_V = 23, 19

# Tiny dimensions for every paper config; heads must divide hidden and 2 * hidden.
TINY = ["model.emb_size=8", "model.hidden_size=12", "model.dropout=0.0", "model.rnn_dropout=0.0"]


def tiny_model(path: Path):
    cfg = load_config(path, TINY)
    cfg.model.attention_heads = min(cfg.model.attention_heads, 4)
    if cfg.model.arch == "transformer":  # d_model = E, a small FFN
        cfg.model.emb_size = cfg.model.hidden_size
        cfg.model.options["ffn_size"] = 16
    torch.manual_seed(0)
    model = build_model(cfg.model, SRC_V, SRC_V if cfg.model.options.get("tie_all_embeddings") else TGT_V)
    uniform_init_(model, 0.3)
    return model.eval()


def batch(seed: int = 1, device: torch.device | str = "cpu"):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, SRC_V, (3, 7), generator=g)
    src_mask = torch.ones(3, 7, dtype=torch.bool)
    src_mask[1, 5:] = False  # lengths 7, 5, 3
    src_mask[2, 3:] = False
    src = src.masked_fill(~src_mask, 0)
    tgt_in = torch.randint(4, TGT_V, (3, 6), generator=g)
    tgt_in[:, 0] = 2  # BOS
    return src.to(device), src_mask.to(device), tgt_in.to(device)


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.on_device
@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_forward_equals_stepwise_decoding(path, device):
    model = tiny_model(path).to(device)
    src, src_mask, tgt_in = batch(device=device)
    with torch.no_grad():
        expected = torch.log_softmax(model(src, src_mask, tgt_in).float(), -1)
        memory = model.encode(src, src_mask)
        state = model.init_state(memory)
        for j in range(tgt_in.size(1)):
            log_probs, state, extras = model.step(tgt_in[:, j], state, memory)
            torch.testing.assert_close(log_probs, expected[:, j], atol=1e-5, rtol=1e-5)
            if "attention" in extras:
                mass = extras["attention"].sum(-1)
                if "local-p" in path.stem:  # Gaussian-weighted, not renormalised (Luong et al.)
                    assert bool(((mass > 0) & (mass <= 1 + 1e-5)).all())
                else:
                    torch.testing.assert_close(mass, torch.ones(3, device=device), atol=1e-5, rtol=0)
                assert float(extras["attention"][2, 3:].abs().max()) == 0.0  # padding gets no weight


@pytest.mark.on_device
@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_padding_does_not_change_scores(path, device):
    model = tiny_model(path).to(device)
    src, src_mask, tgt_in = batch(device=device)
    with torch.no_grad():
        together = model(src, src_mask, tgt_in)
        alone = model(src[2:, :3], src_mask[2:, :3], tgt_in[2:])
    torch.testing.assert_close(together[2:], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.on_device
@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_beam_search_and_gradients(path, device):
    model = tiny_model(path).to(device)
    src, src_mask, tgt_in = batch(device=device)
    hyps = beam_search(model, src, src_mask, torch.tensor([6, 5, 4], device=device), beam=3)
    assert [len(h) for h in hyps] == [1, 1, 1]
    assert all(len(h[0].tokens) <= 5 for h in hyps)
    model.train()
    model(src, src_mask, tgt_in).float().logsumexp(-1).sum().backward()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None]
    assert not no_grad, f"parameters without gradient: {no_grad}"


@pytest.mark.parametrize("path", [p for p in PAPER_CONFIGS if load_config(p).model.layer_norm],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_uniform_init_keeps_every_layer_norm_at_its_identity_start(path):
    """Gains drawn from U(±s) (some negative, most near 0) shrink every normalised gate
    pre-activation to almost nothing: the layer-normalised units must start at gain 1,
    offset 0 whatever the scale of the other weights."""
    model = tiny_model(path)
    norms = [m for m in model.modules() if isinstance(m, cells.base.GateNorm)]
    assert norms, path
    for norm in norms:
        assert torch.equal(norm.gain, torch.ones_like(norm.gain))
        assert torch.equal(norm.offset, torch.zeros_like(norm.offset))
    others = [p for n, p in model.named_parameters() if "gate_norm" not in n and p.dim() >= 2]
    assert all(p.abs().max() <= 0.3 for p in others) and any(p.abs().max() > 0.2 for p in others)
