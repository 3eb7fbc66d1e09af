"""`train.compile_step`: teacher forcing's decoder step through torch.compile.

Made for GPUs, where the eager step loop is bound by kernel launches; what a CPU can check
is that the GPU's code path traces into one graph for every model that claims it, and that
the compiled step computes the model's function (values and gradients) across batch shapes.
The last test also runs on a GPU (`pytest --device cuda -m on_device`, docs/gpu.md).
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo as dynamo

from rnmt import deferred_grads, kernels
from rnmt.config import load_config
from rnmt.fast import gru_cuda
from rnmt.models import build_model
from rnmt.models.base import RecurrentTranslationModel, uniform_init_
from tests.support import REPO

PAPER_CONFIGS = sorted((REPO / "configs" / "papers").glob("*/*.yaml"))
SRC_V, TGT_V = 23, 19


def tiny(path, dropout: float = 0.0):
    cfg = load_config(path, ["model.emb_size=8", "model.hidden_size=12", f"model.dropout={dropout}"])
    if "rnn_dropout" in cfg.model.__dataclass_fields__ and cfg.model.arch != "transformer":
        cfg.model.rnn_dropout = dropout
    cfg.model.attention_heads = min(cfg.model.attention_heads, 4)
    if cfg.model.arch == "transformer":
        cfg.model.emb_size = cfg.model.hidden_size
        cfg.model.options["ffn_size"] = 16
    torch.manual_seed(0)
    model = build_model(cfg.model, SRC_V, SRC_V if cfg.model.options.get("tie_all_embeddings") else TGT_V)
    uniform_init_(model, 0.3)
    return model


def batch(seed: int, rows: int, src_len: int, tgt_len: int):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, SRC_V, (rows, src_len), generator=g)
    mask = torch.ones(rows, src_len, dtype=torch.bool)
    mask[1, src_len - 2:] = False
    return src.masked_fill(~mask, 0), mask, torch.randint(4, TGT_V, (rows, tgt_len), generator=g)


@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_gpu_path_of_every_compilable_step_is_one_graph(path):
    model = tiny(path, dropout=0.1).train()  # dropout in the graph, as in training
    if not isinstance(model, RecurrentTranslationModel) or not model.compilable_step:
        return  # compile_step says False for these (next test)
    src, mask, tgt = batch(0, 3, 7, 5)
    # the code a GPU runs: PyTorch expressions (the C++ kernels are the CPU's), plain autograd
    with kernels.use(False), deferred_grads.enabled(False), gru_cuda.use("everywhere"):
        assert kernels.extension() is None  # decided once per process, as in a run, not inside the trace
        memory = model.encode(src, mask)
        state = model.init_state(memory)
        inputs = model.target_inputs(tgt, torch.arange(tgt.size(1)).expand_as(tgt))
        step_inputs = {k: inputs[k][:, 0] for k in model.step_inputs}
        explained = dynamo.explain(model.transition)(step_inputs, state, memory)
    assert explained.graph_break_count == 0, [str(r.reason)[:200] for r in explained.break_reasons]
    assert explained.graph_count == 1


def test_models_without_one_step_graph_compile_nothing():
    by_name = {f"{p.parent.name}/{p.stem}": p for p in PAPER_CONFIGS}
    for name in ("cseq2seq/cseq2seq1-ls", "cseq2seq/cseq2seq2", "cseq2seq/seq2seq"):
        model = tiny(by_name[name])
        expected = isinstance(model, RecurrentTranslationModel) and model.compilable_step
        assert model.compile_step() is expected
    assert tiny(by_name["cseq2seq/cseq2seq1-ls"]).compile_step() is False  # data-dependent re-reading


@pytest.mark.on_device
@pytest.mark.parametrize("name", ["cseq2seq/rnnsearch", "atr/rnnsearch-atr", "dtmt/dtmt4"])
def test_the_compiled_step_computes_the_same_scores_and_gradients(name, device):
    path = REPO / "configs" / "papers" / f"{name}.yaml"
    model = tiny(path).to(device).eval()

    def passes():
        out = []
        for seed, shape in enumerate([(3, 7, 6), (4, 5, 9), (2, 8, 4)]):  # one graph for every shape
            src, mask, tgt = (t.to(device) for t in batch(seed, *shape))
            logits = model(src, mask, tgt)
            model.zero_grad()
            logits.float().log_softmax(-1).mean().backward()
            out.append((logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                                          if p.grad is not None}))
        return out

    eager = passes()
    assert model.compile_step() is True
    compiled = passes()
    for (logits_e, grads_e), (logits_c, grads_c) in zip(eager, compiled):
        torch.testing.assert_close(logits_c, logits_e, rtol=1e-5, atol=1e-6)
        assert grads_c.keys() == grads_e.keys()
        for n in grads_e:
            torch.testing.assert_close(grads_c[n], grads_e[n], rtol=1e-4, atol=1e-7, msg=n)


def test_a_run_trains_and_resumes_with_the_compiled_step(tmp_path, tiny_corpus):
    import rnmt
    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    lines = []
    summary = rnmt.train(tree, ["train.max_steps=2", "train.validate_every=0", "train.compile_step=true"],
                         out=tmp_path / "run", log=lines.append)
    assert summary["steps"] == 2 and summary["loss"] == summary["loss"]  # finite, not NaN
    assert any("train.compile_step: teacher forcing's decoder step runs through torch.compile" in x for x in lines)
    # the option may be turned off (or on) when a run resumes: the updates compute the same function
    summary = rnmt.train(tree, ["train.max_steps=3", "train.validate_every=0", "train.compile_step=false"],
                         out=tmp_path / "run", resume=True, log=lines.append)
    assert summary["steps"] == 3


@pytest.mark.parametrize("name, rnn_dropout, declines", [
    ("atr/rnnsearch-atr", 0.0, None),  # measured 1.18x on an H200
    ("dtmt/dtmt1", 0.0, None),  # 1.21x
    ("dtmt/dtmt4", 0.0, None),  # 1.29x
    ("atr/rnnsearch-gru", 0.0, "fused"),  # 0.51x: the fused GRU cell twice
    ("cseq2seq/rnnsearch", 0.0, "fused"),  # dl4mt's GRU
    ("dtmt/shallow-rnmt", 0.0, None),  # GRU units, but with layer-normalised gates: not the fused cell
    ("atr/rnnsearch-gru", 0.1, None),  # candidate dropout in training: the GRU's step is not fused
    ("atr/deep-rnnsearch", 0.0, "fused"),  # every decoder layer a GRU
    ("survey/luong-general", 0.0, None),  # LSTM layers
    ("cseq2seq/rnnsearch-minus", 0.0, "fused"),
    ("cseq2seq/cseq2seq1-ls", 0.0, "data-dependent"),
    ("survey/transformer-base", 0.0, "no step loop"),
])
def test_auto_compiles_the_steps_it_was_measured_to_speed_up(name, rnn_dropout, declines, monkeypatch):
    from torch.utils import _triton

    from rnmt.training.setup import auto_compile_declines

    monkeypatch.setattr(_triton, "has_triton", lambda: True)
    model = tiny(REPO / "configs" / "papers" / f"{name}.yaml", dropout=rnn_dropout).train()
    reason = auto_compile_declines(model, torch.device("cuda"))
    assert reason is None if declines is None else declines in reason
    assert "not on a GPU" in auto_compile_declines(model, torch.device("cpu"))
    if declines == "fused":
        with gru_cuda.use(False):  # without the fused cell the GRU's step is element-wise work again
            assert auto_compile_declines(model, torch.device("cuda")) is None
        monkeypatch.setattr(_triton, "has_triton", lambda: False)
    elif declines is None:
        monkeypatch.setattr(_triton, "has_triton", lambda: False)
        assert "no Triton" in auto_compile_declines(model, torch.device("cuda"))


@pytest.mark.parametrize("value, expected", [("auto", "auto"), ("true", True), ("false", False)])
def test_compile_step_takes_true_false_or_auto(value, expected):
    from rnmt.config import load_config

    assert load_config(PAPER_CONFIGS[0], [f"train.compile_step={value}"]).train.compile_step == expected
    assert load_config(PAPER_CONFIGS[0]).train.compile_step == "auto"


def test_compile_step_names_its_values_when_given_another():
    from rnmt.config import load_config
    from rnmt.errors import UserError

    for value in ("3", "null"):  # null is no setting either (it would have meant "compile")
        with pytest.raises(UserError, match=r"'train.compile_step' must be true or false or 'auto', got"):
            load_config(PAPER_CONFIGS[0], [f"train.compile_step={value}"])


@pytest.mark.on_device
def test_auto_compiles_an_atr_run_on_a_gpu_which_resumes_exactly(tmp_path, tiny_corpus, device):
    """auto on a GPU without the update's CUDA graphs (bf16, or `train.cuda_graphs: false`):
    ATR's step compiled, a stopped run resumed equals an uninterrupted one (the compiled
    dropout draws from the generator the checkpoint restores)."""
    if device.type == "cpu":
        pytest.skip("auto compiles on a GPU only: run with --device cuda")
    from tests.support import assert_resume_is_exact, tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(arch="atr-rnnsearch", cell="atr", rnn_dropout=0.1)
    tree["train"].update(device=str(device), validate_every=0, cuda_graphs=False)
    lines = []
    assert_resume_is_exact(tree, tmp_path, steps=6, stop_at=3, log=lines.append)
    assert any("train.compile_step: teacher forcing's decoder step runs through torch.compile" in x for x in lines)


def test_auto_on_a_gpu_compiles_falls_back_to_eager_on_failure_and_says_so(monkeypatch):
    """What set-up does with each setting (a CPU model standing in for a GPU one: the choice
    reads the device and the model, and compiling is lazy, so nothing runs on a GPU here)."""
    import torch._dynamo
    from torch.utils import _triton

    from rnmt.plan import resolve_plan
    from rnmt.training.setup import _set_up_compile_step

    monkeypatch.setattr(_triton, "has_triton", lambda: True)
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    with torch._dynamo.config.patch(suppress_errors=False):  # the process's setting restored after
        for name, setting, device, compiled, said in [
            ("atr/rnnsearch-gru", True, cuda, True, "runs through torch.compile"),  # forced
            ("atr/rnnsearch-atr", False, cuda, False, None),
            ("atr/rnnsearch-atr", "auto", cpu, False, None),  # the CPU: nothing, not even a line
            ("atr/rnnsearch-gru", "auto", cuda, False, "fused GPU kernels already"),
            ("atr/rnnsearch-atr", "auto", cuda, True, "runs through torch.compile"),
        ]:
            assert torch._dynamo.config.suppress_errors is False  # until auto compiles
            path = REPO / "configs" / "papers" / f"{name}.yaml"
            model, lines = tiny(path).train(), []
            cfg = load_config(path, ["train.amp=none", "train.cuda_graphs=false",
                                     f"train.compile_step={str(setting).lower()}"])
            choice = resolve_plan(cfg, device, model=model).compile_step  # the plan decides, with a reason
            _set_up_compile_step(model, choice.value, setting == "auto", "arch", device, lines.append)
            assert (model._compiled_transition is not None) is compiled is choice.value, (name, setting, device)
            assert choice.reason.startswith("train.compile_step")
            assert (said is None and not lines) or (said is not None and said in " ".join([choice.reason] + lines))
        assert torch._dynamo.config.suppress_errors is True  # auto's compile: a failure must not stop a run
