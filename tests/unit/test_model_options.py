"""Typed architecture options: a misspelled or unused model key is a one-line error."""

from __future__ import annotations

import pytest

from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models import build_model
from rnmt.models.registry import architectures, check_model_config


def test_a_misspelled_option_names_the_closest_valid_one():
    cfg = ModelConfig(arch="atr-rnnsearch", cell="atr", emb_size=8, hidden_size=8, options={"tanh_state": True})
    with pytest.raises(UserError, match=r"model.options.tanh_state .* did you mean 'tanh_states'"):
        build_model(cfg, 20, 20)


def test_an_option_of_the_wrong_type_is_refused():
    cfg = ModelConfig(arch="luong", cell="lstm", options={"attention": "dot", "window": "ten"})
    with pytest.raises(UserError, match="model.options.window of arch 'luong' must be int"):
        check_model_config(cfg)
    cfg = ModelConfig(arch="cseq2seq2", options={"cyclic_query": "next"})
    with pytest.raises(UserError, match="cyclic_query must be 'previous' or 'current'"):
        check_model_config(cfg)


def test_a_key_the_architecture_does_not_read_is_refused():
    with pytest.raises(UserError, match="model.enc_layers is not read by arch 'cseq2seq1'"):
        check_model_config(ModelConfig(arch="cseq2seq1", enc_layers=2))
    with pytest.raises(UserError, match="model.options.enc_depth is not an option of arch 'rnnsearch'"):
        check_model_config(ModelConfig(arch="rnnsearch", options={"enc_depth": 2}))
    with pytest.raises(UserError, match="model.readout is not read by arch 'atr-rnnsearch'"):
        check_model_config(ModelConfig(arch="atr-rnnsearch", readout="maxout"))


def test_typed_options_reach_the_model():
    model = build_model(ModelConfig(arch="atr-rnnsearch", cell="atr", emb_size=8, hidden_size=8,
                                    options={"tanh_states": True, "context_aware": True}), 20, 20)
    assert model.tanh_states and model.context_aware
    assert len(architectures()) >= 10


def test_hybrid_encoder_keys_are_checked():
    with pytest.raises(UserError, match="model.enc_layers is read by arch 'rnnsearch' only with model.encoder"):
        build_model(ModelConfig(arch="rnnsearch", enc_layers=6, emb_size=8, hidden_size=8), 20, 20)
    with pytest.raises(UserError, match="model.encoder must be one of recurrent, transformer"):
        build_model(ModelConfig(arch="rnnsearch", encoder="cnn", emb_size=8, hidden_size=8), 20, 20)
    with pytest.raises(UserError, match="model.encoder is not read by arch 'cseq2seq1'"):
        check_model_config(ModelConfig(arch="cseq2seq1", encoder="transformer"))
    hybrid = build_model(ModelConfig(arch="dtmt", encoder="transformer", enc_layers=2, attention_heads=2,
                                     emb_size=8, hidden_size=8), 20, 20)
    assert hybrid.source is not None and not hasattr(hybrid, "encoder")
    with pytest.raises(UserError, match="model.encoder_norm is read by arch 'rnnsearch' only with model.encoder"):
        build_model(ModelConfig(arch="rnnsearch", encoder_norm="pre", emb_size=8, hidden_size=8), 20, 20)
    with pytest.raises(UserError, match="model.encoder_norm must be one of post, pre"):
        build_model(ModelConfig(arch="rnnsearch", encoder="transformer", encoder_norm="sandwich",
                                attention_heads=2, emb_size=8, hidden_size=8), 20, 20)
    post = build_model(ModelConfig(arch="rnnsearch", encoder="transformer", attention_heads=2, emb_size=8,
                                   hidden_size=8), 20, 20)
    pre = build_model(ModelConfig(arch="rnnsearch", encoder="transformer", encoder_norm="pre", attention_heads=2,
                                  emb_size=8, hidden_size=8), 20, 20)
    assert post.source.final_norm is None and pre.source.final_norm is not None  # pre-norm ends with an LN


def test_an_architecture_name_cannot_be_registered_twice():
    from rnmt.models import registry

    registry.architecture("rnnsearch")  # every built-in registered

    class Impostor:
        pass

    with pytest.raises(ValueError, match="architecture 'rnnsearch' is registered twice"):
        registry.register("rnnsearch")(Impostor)
    assert registry.architecture("rnnsearch").builder is not Impostor
