"""Cseq2seq-I reports its re-reading GRU's gates per source position (section 5.4) on request."""

import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.search.forced import forced_decode


def tiny_cyclic(context="last"):
    torch.manual_seed(0)
    cfg = ModelConfig(arch="cseq2seq1", options={"context": context}, emb_size=8, hidden_size=10,
                      src_vocab_size=12, tgt_vocab_size=12)
    return build_model(cfg).eval()


def test_step_reports_no_gates_unless_asked():
    model = tiny_cyclic()
    src = torch.tensor([[5, 6, 7, 3]])
    memory = model.encode(src, src != 0)
    _, _, extras = model.step(torch.tensor([2]), model.init_state(memory), memory)
    assert "source_gates" not in extras


def test_forced_decoding_collects_update_and_reset_gates_per_source_position():
    model = tiny_cyclic()
    sources, targets = [[5, 6, 7], [8, 9]], [[4, 5], [6, 7, 8]]
    results = forced_decode(model, sources, targets)
    for (src, tgt), fd in zip(zip(sources, targets), results):
        assert set(fd.source_gates) == {"r", "z"}
        z = fd.source_gates["z"]
        assert z.shape == (len(tgt) + 1, len(src) + 1)
        assert ((z > 0) & (z < 1)).all()
    assert model.report_source_gates is False  # switched back off


def test_gate_collection_does_not_change_the_scores():
    model = tiny_cyclic(context="mean")
    src = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])
    mask = src != 0
    memory = model.encode(src, mask)
    state = model.init_state(memory)
    plain, _, _ = model.step(torch.tensor([2, 2]), state, memory)
    model.report_source_gates = True
    with_gates, _, extras = model.step(torch.tensor([2, 2]), state, memory)
    # Collecting gates walks every position with masking instead of the packed rows, so the
    # products run on other shapes: equal up to rounding, not bit for bit on every CPU.
    torch.testing.assert_close(plain, with_gates, rtol=1e-5, atol=1e-6)
    assert extras["source_gates"]["z"].shape == (2, 4)
    assert torch.all(extras["source_gates"]["z"][1, 3] == 0)  # padding position
