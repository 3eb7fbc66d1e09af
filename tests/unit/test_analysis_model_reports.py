"""What each model declares to analysis (`reports()`): the units behind its encoder gates and
decoder trace, or none."""

import torch

from rnmt.analysis.atr import dependency_weights


def test_atr_rnnsearch_reports_what_its_decoder_and_encoder_compute():
    """The declared gates and traces are those of the model's own computation: the trace's
    attention is that of `step`, and eq. 10 over the reported encoder gates rebuilds the
    forward encoder's states."""
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(arch="atr-rnnsearch", cell="atr", emb_size=8, hidden_size=12), 30, 30).eval()
    assert model.reports().encoder == {"fwd": "atr", "bwd": "atr"}
    assert model.reports().decoder == {"unit1": "atr", "unit2": "atr"}
    src, tgt_in = torch.randint(4, 30, (2, 5)), torch.randint(4, 30, (2, 4))
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    with torch.no_grad():
        trace = model.decoder_trace(src, mask, tgt_in)
        memory = model.encode(src, mask)
        state = model.init_state(memory)
        for j in range(tgt_in.size(1)):
            _, state, extras = model.step(tgt_in[:, j], state, memory)
            torch.testing.assert_close(trace["attention"][:, j], extras["attention"])
        torch.testing.assert_close(trace["unit2.state"][:, -1], state["s"])
        gates = model.encoder_gates(src, mask)
    assert set(gates) == {"fwd.i", "fwd.f", "bwd.i", "bwd.f"}
    x = model.dropout(model.src_embed(src))
    dep = dependency_weights(model.encoder.fwd, x, mask)
    torch.testing.assert_close(gates["fwd.i"], dep.gates["i"])
    torch.testing.assert_close(dep.reconstruct().float(), dep.states, atol=1e-5, rtol=1e-5)


def test_context_aware_atr_rnnsearch_reports_its_forward_encoder_only():
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    cfg = ModelConfig(arch="atr-rnnsearch", cell="atr", emb_size=8, hidden_size=12, options={"context_aware": True})
    model = build_model(cfg, 30, 30).eval()
    assert model.reports().encoder == {"fwd": "atr"}
    with torch.no_grad():
        gates = model.encoder_gates(torch.randint(4, 30, (2, 5)), torch.ones(2, 5, dtype=torch.bool))
    assert set(gates) == {"fwd.i", "fwd.f"} and gates["fwd.i"].shape == (2, 5, 12)


def test_models_without_recurrent_reports_declare_none():
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    model = build_model(ModelConfig(arch="transformer", emb_size=8, hidden_size=8, options={"ffn_size": 16}), 30, 30)
    assert model.reports().encoder == {} and model.reports().decoder == {}


def test_conditional_decoders_declare_their_bidirectional_encoder_and_units():
    """The declaration comes from the shared base: a hybrid RNNSearch (Transformer encoder)
    reports only its decoder units; Cseq2seq-I with ATR units reports its encoder's gates."""
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    hybrid = build_model(ModelConfig(arch="rnnsearch", cell="atr", emb_size=8, hidden_size=12, encoder="transformer",
                                     attention_heads=2, enc_layers=1), 30, 30)
    assert hybrid.reports().encoder == {} and hybrid.reports().decoder == {"unit1": "atr", "unit2": "atr"}
    cyclic = build_model(ModelConfig(arch="cseq2seq1", cell="atr", emb_size=8, hidden_size=12), 30, 30).eval()
    assert cyclic.reports().encoder == {"fwd": "atr", "bwd": "atr"}
    src, mask = torch.randint(4, 30, (2, 5)), torch.ones(2, 5, dtype=torch.bool)
    with torch.no_grad():
        gates = cyclic.encoder_gates(src, mask)
        annotations = cyclic.encoder(cyclic.encoder_inputs(src), mask)[0]
    assert set(gates) == {"fwd.i", "fwd.f", "bwd.i", "bwd.f"}
    dep = dependency_weights(cyclic.encoder.fwd, cyclic.encoder_inputs(src), mask)
    torch.testing.assert_close(dep.states, annotations[..., :12])
