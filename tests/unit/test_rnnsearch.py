"""The dl4mt RNNSearch: parameter count, teacher forcing vs stepping, padding, every unit."""

import pytest
import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model, count_parameters
from rnmt.training.loss import label_smoothed_nll


def test_parameter_count_matches_cseq2seq_table_1():
    # Cseq2seq Table 1 / SPEC A1: 30K vocabularies, E = 620, d = 1000 -> 89.67M.
    with torch.device("meta"):
        model = build_model(ModelConfig(src_vocab_size=30000, tgt_vocab_size=30000))
    assert count_parameters(model)["total"] == 89_673_261


@pytest.mark.parametrize("cell", ["gru"])
def test_forward_agrees_with_step_by_step_decoding(cell):
    torch.manual_seed(0)
    model = build_model(ModelConfig(cell=cell, emb_size=8, hidden_size=12, src_vocab_size=11,
                                    tgt_vocab_size=13)).eval()
    src = torch.randint(4, 11, (3, 6))
    mask = torch.ones_like(src, dtype=torch.bool)
    mask[1, 4:] = False
    tgt_in = torch.randint(4, 13, (3, 5))
    tgt_in[:, 0] = model.bos_id
    forced = torch.log_softmax(model(src, mask, tgt_in), -1)
    memory = model.encode(src, mask)
    state = model.init_state(memory)
    for j in range(tgt_in.size(1)):
        log_probs, state, extras = model.step(tgt_in[:, j], state, memory)
        assert torch.allclose(log_probs, forced[:, j], atol=1e-5)
        assert torch.allclose(extras["attention"][1, 4:], torch.zeros(2))


def test_source_padding_does_not_change_log_probs():
    torch.manual_seed(1)
    model = build_model(ModelConfig(emb_size=8, hidden_size=12, src_vocab_size=11, tgt_vocab_size=13)).eval()
    short = torch.tensor([[5, 6, 3]])
    padded = torch.tensor([[5, 6, 3, 0, 0, 0]])
    tgt = torch.tensor([[2, 7, 8, 9]])
    a = model(short, short != 0, tgt)
    b = model(padded, padded != 0, tgt)
    assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("cell", ["gru", "lstm", "srnn", "atr", "ran", "lau", "lgru", "tgru", "transition"])
def test_every_unit_drives_rnnsearch(cell):
    """model.cell selects any unit: teacher forcing agrees with stepping and a step trains."""
    torch.manual_seed(0)
    cfg = ModelConfig(cell=cell, emb_size=8, hidden_size=10, src_vocab_size=11, tgt_vocab_size=13,
                      cell_options={"depth": 1} if cell == "transition" else {})
    model = build_model(cfg)
    src = torch.randint(4, 11, (2, 5))
    mask = torch.ones_like(src, dtype=torch.bool)
    mask[0, 3:] = False
    tgt_in = torch.tensor([[2, 5, 6], [2, 7, 8]])
    tgt_out = torch.tensor([[5, 6, 3], [7, 8, 3]])
    model.eval()
    forced = torch.log_softmax(model(src, mask, tgt_in), -1)
    memory = model.encode(src, mask)
    state = model.init_state(memory)
    for j in range(3):
        log_probs, state, _ = model.step(tgt_in[:, j], state, memory)
        assert torch.allclose(log_probs, forced[:, j], atol=1e-5)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(5):
        loss, _ = label_smoothed_nll(model(src, mask, tgt_in), tgt_out, tgt_out != 0, 0.0)
        opt.zero_grad()
        (loss / 6).backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
