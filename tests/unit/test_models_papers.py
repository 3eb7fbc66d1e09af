"""Paper-specific behaviour of the model zoo: sharing, cyclic re-reading, zero first inputs,
the ATR paper's tanh switch, the CA encoder, and the attention variants."""

from __future__ import annotations

import pytest
import torch

from rnmt import cells, deferred_grads
from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.models.cseq2seq import _active_rows, cyclic_context
from rnmt.modules.embedding import Embedding, positional_encoding
from rnmt.modules.luong import LuongAttention
from rnmt.modules.multihead import MultiHeadAdditiveAttention


def tiny(arch: str, **kw) -> torch.nn.Module:
    cfg = ModelConfig(arch=arch, emb_size=6, hidden_size=8, **kw)
    torch.manual_seed(0)
    model = build_model(cfg, 17, 13)
    uniform_init_(model, 0.3)
    return model.eval()


def test_sgru_makes_the_first_decoder_unit_the_encoder():
    model = tiny("cseq2seq2", options={"context": "last", "share_gru": True})
    assert model.unit1 is model.encoder


def test_sword_ties_the_softmax_matrix_to_the_target_embedding():
    model = tiny("cseq2seq2", options={"context": "last"}, tie_target_embeddings=True)
    assert model.readout.output.weight is model.tgt_embed.weight


def test_tied_bos_row_still_looks_up_zero_after_training_moves_it():
    emb = Embedding(5, 3, zero_index=2)
    with torch.no_grad():
        emb.weight.fill_(1.0)  # what an output layer tied to it could do
    assert torch.equal(emb(torch.tensor([2, 1]))[0], torch.zeros(3))
    assert torch.equal(emb(torch.tensor([2, 1]))[1], torch.ones(3))


def test_cyclic_context_last_state_is_the_state_at_each_sentences_last_token():
    torch.manual_seed(0)
    cell = cells.build("gru", 4, 5)
    x = torch.randn(2, 6, 4)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    h0 = torch.randn(2, 5)
    px = cell.project_inputs(x)
    last = cyclic_context(cell, px, mask, h0, "last")
    mean = cyclic_context(cell, px, mask, h0, "mean")
    _, short_last, _ = cells.run_cell(cell, x[1:, :3], None, state0=h0[1:])
    outs, _, _ = cells.run_cell(cell, x[1:, :3], None, state0=h0[1:])
    torch.testing.assert_close(last[1:], short_last)
    torch.testing.assert_close(mean[1:], outs.mean(1))


@pytest.mark.parametrize("unit", ["gru", "lstm"])
@pytest.mark.parametrize("mode", ["last", "mean"])
def test_cyclic_context_on_rows_sorted_longest_first_matches_the_masked_loop(unit, mode):
    """Sorted rows take the packed path (only rows still inside their sentence step); the
    same rows in another order take the masked loop: same values and gradients."""
    torch.manual_seed(1)
    cell = cells.build(unit, 4, 5)
    lengths = torch.tensor([6, 6, 4, 2, 1])
    mask = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)
    x, h0 = torch.randn(5, 6, 4), torch.randn(5, cell.state_size)
    order = torch.tensor([3, 0, 4, 2, 1])  # not longest first
    assert _active_rows(mask) == [5, 4, 3, 3, 2, 2] and _active_rows(mask[order]) is None
    results = []
    for rows in (torch.arange(5), order):
        leaves = [x[rows].clone().requires_grad_(), h0[rows].clone().requires_grad_()]
        out = cyclic_context(cell, cell.project_inputs(leaves[0]), mask[rows], leaves[1], mode)
        out.square().sum().backward()
        back = torch.argsort(rows)
        results.append([out.detach()[back]] + [leaf.grad[back] for leaf in leaves])
    for packed, masked in zip(*results):
        torch.testing.assert_close(packed, masked, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_multihead_attention_reads_head_major_values_like_the_plain_layout(training):
    """DTMT keeps its annotations head-major [B, h, S, D/h] for the context product; the
    result and the gradients equal those from the [B, S, D] layout, in a training pass (whose
    annotation gradient is collected over the steps) and outside one."""
    torch.manual_seed(2)
    att = MultiHeadAdditiveAttention(6, 8, 8, heads=2)
    B, G, S, steps = 2, 3, 5, 3
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 3:] = False
    values0, queries = torch.randn(B, S, 8), torch.randn(steps, B * G, 6)
    results = []
    for head_major in (True, False):
        values = values0.clone().requires_grad_()
        with deferred_grads.deferred_weight_grads(training):
            read = att.head_major(values) if head_major else values
            keys = att.precompute(values)
            contexts = [att(q, keys, read, mask)[0] for q in queries]
        torch.stack(contexts).square().sum().backward()
        results.append((torch.stack(contexts).detach(), values.grad))
    torch.testing.assert_close(results[0][0], results[1][0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(results[0][1], results[1][1], atol=1e-6, rtol=1e-5)


def test_cseq2seq1_context_depends_on_the_decoder_query():
    model = tiny("cseq2seq1", options={"context": "last"})
    src = torch.randint(4, 17, (1, 5))
    memory = model.encode(src, torch.ones(1, 5, dtype=torch.bool))
    state = model.init_state(memory)
    inputs = model.target_inputs(torch.tensor([5]), torch.tensor([0]))
    _, out1, _ = model.transition(inputs, state, memory)
    _, out2, _ = model.transition(inputs, {"s": state["s"] + 0.5}, memory)
    assert not torch.allclose(out1["context"], out2["context"])


def test_cseq2seq2_previous_and_current_queries_differ():
    src, mask, tgt = torch.randint(4, 17, (2, 5)), torch.ones(2, 5, dtype=torch.bool), torch.randint(4, 13, (2, 4))
    tgt[:, 0] = 2
    prev = tiny("cseq2seq2", options={"context": "last"})(src, mask, tgt)
    cur = tiny("cseq2seq2", options={"context": "last", "cyclic_query": "current"})(src, mask, tgt)
    assert prev.shape == cur.shape and not torch.allclose(prev, cur)


def test_dtmt_first_decoder_input_is_exactly_zero_with_positional_encoding():
    model = tiny("dtmt", cell="gru", layer_norm=True, attention_heads=2, options={"positional_encoding": True})
    emb = model._embed(model.tgt_embed, torch.tensor([[2, 5]]), torch.tensor([[0, 0]]))
    assert torch.equal(emb[0, 0], torch.zeros(6))
    expected = model.tgt_embed(torch.tensor([5]))[0] + positional_encoding(torch.tensor(0), 6) / 6**0.5
    torch.testing.assert_close(emb[0, 1], expected)


def test_positional_encoding_layout_is_sin_then_cos():
    pe = positional_encoding(torch.tensor([0, 3]), 8)
    assert torch.equal(pe[0], torch.tensor([0.0] * 4 + [1.0] * 4))
    assert abs(float(pe[1, 0]) - torch.sin(torch.tensor(3.0)).item()) < 1e-6  # timescale 1 on channel 0


def test_atr_tanh_states_change_scores_but_not_parameters():
    raw = tiny("atr-rnnsearch", cell="atr", options={"tanh_states": False})
    squashed = tiny("atr-rnnsearch", cell="atr", options={"tanh_states": True})
    assert sum(p.numel() for p in raw.parameters()) == sum(p.numel() for p in squashed.parameters())
    src, mask, tgt = torch.randint(4, 17, (2, 5)), torch.ones(2, 5, dtype=torch.bool), torch.randint(4, 13, (2, 3))
    assert not torch.allclose(raw(src, mask, tgt), squashed(src, mask, tgt))


def test_context_aware_encoder_annotations_have_one_direction_size_and_read_the_forward_pass():
    model = tiny("atr-rnnsearch", cell="atr", options={"context_aware": True})
    src, mask = torch.randint(4, 17, (1, 5)), torch.ones(1, 5, dtype=torch.bool)
    memory = model.encode(src, mask)
    assert memory["annotations"].shape == (1, 5, 8)
    # Changing only the first word changes the last annotation through the forward states.
    other = src.clone()
    other[0, 0] = 4 if src[0, 0] != 4 else 5
    assert not torch.allclose(memory["annotations"][0, -1], model.encode(other, mask)["annotations"][0, -1])


def test_multihead_additive_attention_context_keeps_the_annotation_size():
    torch.manual_seed(0)
    att = MultiHeadAdditiveAttention(query_size=8, key_size=12, attn_size=8, heads=4)
    values = torch.randn(2, 5, 12)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    with torch.no_grad():
        context, weights = att(torch.randn(2, 8), att.precompute(values), values, mask)
    assert context.shape == (2, 12) and weights.shape == (2, 5)
    assert float(weights[1, 3:].abs().max()) == 0.0
    assert sum(p.numel() for p in att.parameters()) == 12 * 8 + 8 * 8 + 2  # W_k, W_q, one shared v


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_luong_global_attention_normalises_over_real_positions(score):
    torch.manual_seed(0)
    att = LuongAttention(score, 6, 6)
    values = torch.randn(2, 4, 6)
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    with torch.no_grad():
        _, weights = att(torch.randn(2, 6), att.precompute(values), values, mask)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))
    assert float(weights[1, 2:].abs().max()) == 0.0


def test_local_p_attention_stays_inside_its_window():
    torch.manual_seed(0)
    att = LuongAttention("local-p", 6, 6, window=1)
    values = torch.randn(1, 9, 6)
    with torch.no_grad():
        _, weights = att(torch.randn(1, 6), att.precompute(values), values, torch.ones(1, 9, dtype=torch.bool))
    assert int((weights > 0).sum()) <= 3


def test_sutskever_reads_the_source_reversed():
    model = tiny("seq2seq-sutskever", cell="gru", enc_layers=2, dec_layers=2)
    src = torch.tensor([[5, 6, 7, 0]])
    mask = torch.tensor([[True, True, True, False]])
    memory = model.encode(src, mask)
    # The final state of a reversed read equals a forward read of the reversed sentence.
    x = model.src_embed(torch.tensor([[7, 6, 5]]))
    _, last, _ = cells.run_cell(model.encoder[0], x, None)
    torch.testing.assert_close(memory["final0"], last)


def test_transformer_step_caches_grow_by_one_position():
    model = build_model(ModelConfig(arch="transformer", emb_size=8, hidden_size=8, attention_heads=2,
                                    enc_layers=2, dec_layers=2, options={"ffn_size": 12}), 17, 13).eval()
    memory = model.encode(torch.randint(4, 17, (2, 5)), torch.ones(2, 5, dtype=torch.bool))
    state = model.init_state(memory)
    for t in range(3):
        _, state, _ = model.step(torch.tensor([2, 2]) if t == 0 else torch.tensor([5, 6]), state, memory)
        assert state["k0"].shape == (2, t + 1, 8)


def test_rnnsearch_minus_readout_reads_the_previous_state():
    """Bahdanau et al. A.2.2: t~_j = U_o s_{j-1} + V_o E y_{j-1} + C_o c_j. The first word's
    distribution therefore depends on s_0 and c_1 only, not on the unit that makes s_1."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(arch="rnnsearch-minus", cell="gru", emb_size=6, hidden_size=8,
                                    readout="maxout", options={"readout_size": 5}), 20, 20)
    uniform_init_(model, 0.3)
    model.eval()
    src = torch.tensor([[4, 5, 6, 2]])
    mask = src != 0
    tgt_in = torch.tensor([[1, 9, 10]])
    with torch.no_grad():
        before = torch.log_softmax(model(src, mask, tgt_in), -1)
        model.unit.weight_h.add_(0.5)  # changes s_1, s_2, ... but not s_0
        after = torch.log_softmax(model(src, mask, tgt_in), -1)
    torch.testing.assert_close(before[:, 0], after[:, 0])
    assert not torch.allclose(before[:, 1], after[:, 1])
