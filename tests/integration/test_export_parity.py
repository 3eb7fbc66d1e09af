"""The exported graphs run by onnxruntime give the PyTorch model's encode / init_state / step
(rnmt.export.parity) on batch sizes, source lengths and beam widths other than the traced
ones, and their batch and length axes are named (dynamic) in the files."""

from __future__ import annotations

import onnx
import torch

from rnmt.config import load_config
from rnmt.export.examples import TRACE_BATCH, Shapes
from rnmt.export.parity import CHECK_SHAPES, max_differences
from rnmt.export.writing import GRAPH_FILES, write_graphs
from rnmt.models.base import uniform_init_
from rnmt.models.registry import build_model
from tests.support import REPO

SRC_V, TGT_V = 23, 19
TINY = ["model.emb_size=8", "model.hidden_size=12", "model.dropout=0.0", "model.rnn_dropout=0.0"]
TOLERANCE = 1e-5


def tiny_plain_model(config: str, overrides=()):
    cfg = load_config(REPO / "configs" / config, [*TINY, *overrides])
    torch.manual_seed(0)
    model = build_model(cfg.model, SRC_V, TGT_V, accelerated=False)
    uniform_init_(model, 0.3)
    return model.eval()


def exported(model, directory):
    return write_graphs(model, directory, SRC_V, TGT_V, opset=17)


def test_rnnsearch_gru_graphs_match_the_model_on_untraced_shapes(tmp_path):
    model = tiny_plain_model("papers/cseq2seq/rnnsearch.yaml")
    sig = exported(model, tmp_path)
    assert sig.beam_shares_memory and sig.attention
    assert all(s.batch != TRACE_BATCH for s in CHECK_SHAPES[1:]) and len({s.length for s in CHECK_SHAPES}) == 3
    worst = max_differences(model, sig, tmp_path, SRC_V, TGT_V)
    assert max(worst.values()) < TOLERANCE, worst
    # a long source and a single-word one, far from the traced length
    worst = max_differences(model, sig, tmp_path, SRC_V, TGT_V, [Shapes(4, 40, 2), Shapes(2, 2, 5)])
    assert max(worst.values()) < TOLERANCE, worst


def test_the_graphs_name_their_batch_and_length_axes(tmp_path):
    sig = exported(tiny_plain_model("papers/cseq2seq/rnnsearch.yaml"), tmp_path)
    graphs = {name: onnx.load(str(tmp_path / file)).graph for name, file in GRAPH_FILES.items()}

    def dims(values):
        return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in values}

    enc_in = dims(graphs["encoder"].input)
    assert enc_in == {"src": ["B", "S"], "src_mask": ["B", "S"]}
    enc_out = dims(graphs["encoder"].output)
    assert enc_out["memory.annotations"][:2] == ["B", "S"] and enc_out["memory.src_mask"] == ["B", "S"]
    step_in = dims(graphs["step"].input)
    assert [i.name for i in graphs["step"].input] == ["prev_tokens", "state.s", *(f"memory.{n}" for n in sig.memory)]
    assert step_in["prev_tokens"] == ["N"] and step_in["state.s"][0] == "N"
    assert step_in["memory.keys"][:2] == ["B", "S"]
    step_out = dims(graphs["step"].output)
    assert step_out["log_probs"] == ["N", TGT_V] and step_out["attention"] == ["N", "S"]


def test_a_graph_that_disagrees_with_the_model_is_caught(tmp_path):
    """The check compares values: the same graphs against a model with one weight changed fail."""
    model = tiny_plain_model("papers/cseq2seq/rnnsearch.yaml")
    sig = exported(model, tmp_path)
    with torch.no_grad():
        model.output.bias[5] += 0.1
    worst = max_differences(model, sig, tmp_path, SRC_V, TGT_V)
    assert worst["step"] > 0.01 and worst["encoder"] < TOLERANCE
