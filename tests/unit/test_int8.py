"""int8 decoding (rnmt/int8.py): quantised products give the fp32 model's scores within
int8's error, on every recurrent unit kind."""

from __future__ import annotations

import copy

import pytest
import torch

from rnmt import int8
from rnmt.config import load_config
from rnmt.errors import UserError
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.search.beam import beam_search
from tests.support import REPO

# One config per unit family the decoders use: GRU (dl4mt), ATR, LSTM, RAN, L-GRU + T-GRU
# with layer norm (DTMT), the cyclic re-reader (Cseq2seq), and the Transformer-encoder hybrid.
CONFIGS = ["atr/rnnsearch-gru", "atr/rnnsearch-atr", "atr/rnnsearch-lstm", "atr/rnnsearch-ran", "dtmt/dtmt4",
           "cseq2seq/cseq2seq1-ls", "survey/hybrid-transformer-rnnsearch"]
SIZES = ["model.emb_size=32", "model.hidden_size=32", "model.dropout=0.0", "model.rnn_dropout=0.0",
         "model.src_vocab_size=50", "model.tgt_vocab_size=40"]


def tiny(name: str):
    cfg = load_config(REPO / "configs" / "papers" / f"{name}.yaml", SIZES)
    cfg.model.attention_heads = min(cfg.model.attention_heads, 4)
    torch.manual_seed(0)
    model = build_model(cfg.model, 50, 40)
    uniform_init_(model, 0.1)
    return model.eval()


def batch():
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 50, (3, 9), generator=g)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False
    mask[2, 4:] = False
    src = src.masked_fill(~mask, 0)
    tgt_in = torch.randint(4, 40, (3, 7), generator=g)
    tgt_in[:, 0] = 2
    return src, mask, tgt_in


def test_products_saturate_only_without_vnni():
    assert int8.saturates("fpu avx2 fma")
    assert int8.saturates("avx2 avx512f avx512bw")  # AVX-512 without VNNI: vpmaddubsw too
    assert not int8.saturates("avx2 avx512f avx512_vnni")


# The int8 kernels this PyTorch build has: fbgemm's always on x86, oneDNN's where built in.
KERNELS = [k for k, engine in int8.ENGINES.items() if engine in torch.backends.quantized.supported_engines]


def test_oneDNN_kernels_are_chosen_where_the_cpu_has_amx_int8():
    assert int8.engine_for("avx2 avx512f avx512_vnni amx_bf16 amx_tile amx_int8") == "onednn"
    assert int8.engine_for("avx2 avx512f avx512_vnni avx512_bf16") == "fbgemm"  # Zen 4/5: no AMX
    assert int8.engine_for("avx2 fma") == "fbgemm"
    assert int8.engine_for(None) == "fbgemm"  # /proc/cpuinfo unreadable
    assert int8.engine_for("avx2 amx_int8", "fbgemm") == "fbgemm"  # runtime.int8_kernels decides
    assert int8.engine_for("avx2", " OneDNN ") == "onednn"
    with pytest.raises(UserError, match="int8 kernels must be fbgemm, onednn or auto, got 'mkl'"):
        int8.engine_for("avx2", "mkl")


@pytest.mark.parametrize("kernels", KERNELS)
def test_unit_products_stay_accurate_on_this_cpu(kernels):
    """A recurrent product's input is a tanh-bounded state with values near +-1; with 8-bit
    activations where fbgemm saturates (AVX2 without VNNI) its error was 5.7%."""
    torch.manual_seed(0)
    weight = torch.randn(64, 192) * 0.1
    state = torch.randn(200, 64).tanh()
    exact = state @ weight
    before = torch.backends.quantized.engine
    error = (int8.product(state, int8.pack(weight, kernels)) - exact).norm() / exact.norm()
    assert error < 0.02
    assert torch.backends.quantized.engine == before  # the packing's engine setting is undone


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("name", CONFIGS)
def test_int8_scores_follow_fp32(name, kernels):
    model = tiny(name)
    quantized = int8.quantize_for_decoding(copy.deepcopy(model), kernels=kernels)
    assert int8.is_quantized(quantized)
    src, mask, tgt_in = batch()
    with torch.no_grad():
        expected = torch.log_softmax(model(src, mask, tgt_in), -1)
        memory = quantized.encode(src, mask)
        state = quantized.init_state(memory)
        for j in range(tgt_in.size(1)):  # step by step, as the search runs it
            log_probs, state, _ = quantized.step(tgt_in[:, j], state, memory)
            assert torch.isfinite(log_probs).all()
            # int8 weights and activations: about 1% relative error per product
            torch.testing.assert_close(log_probs, expected[:, j], atol=0.05, rtol=0.0)
            assert not torch.equal(log_probs, expected[:, j])  # the int8 path really ran
        hyps = beam_search(quantized, src, mask, torch.tensor([9, 6, 4]), beam=3)
    assert len(hyps) == 3


def test_int8_is_refused_off_the_cpu_and_leaves_training_untouched():
    model = tiny("atr/rnnsearch-gru")
    assert not int8.is_quantized(model)
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="CPU"):
            int8.quantize_for_decoding(copy.deepcopy(model).cuda())
