"""Analysis on tiny trained models: forced decoding, the exact ATR decomposition of a trained
unit, `rnmt align` and `rnmt analyze` end to end."""

import json
import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from rnmt.analysis.align import word_alignment
from rnmt.analysis.atr import decoder_chain, dependency_weights
from rnmt.analysis.report import analyze
from rnmt.cli import main
from rnmt.errors import UserError
from rnmt.models import load_model
from rnmt.models.base import TranslationModel
from rnmt.search.forced import forced_decode
from tests.support import tiny_config_tree

SRC = ["Y dijo Dios: sea la luz", "", "Y fue la tarde y la mañana"]
TGT = ["And God said, let there be light", "", "And there was evening and morning"]


@pytest.fixture(scope="module")
def atr_run(tmp_path_factory, tiny_corpus):
    """A tiny RNNSearch with ATR units (layer-normalised) trained for a few steps."""
    from rnmt.config import config_from_dict
    from rnmt.training.trainer import Trainer

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(cell="atr", layer_norm=True)
    tree["train"].update(max_steps=4, validate_every=4)
    out = tmp_path_factory.mktemp("atr_run")
    Trainer(config_from_dict(tree), out, log=lambda *_: None).run()
    return out


@pytest.fixture()
def texts(tmp_path):
    src, tgt = tmp_path / "in.es", tmp_path / "in.en"
    src.write_text("\n".join(SRC) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(TGT) + "\n", encoding="utf-8")
    return src, tgt


class WithSourceGates(TranslationModel):
    """Wraps a model and reports made-up per-source gates: z = attention, r = 1 - attention."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def encode(self, src, mask):
        return self.inner.encode(src, mask)

    def init_state(self, memory):
        return self.inner.init_state(memory)

    def step(self, prev, state, memory):
        log_probs, state, extras = self.inner.step(prev, state, memory)
        a = extras["attention"]
        return log_probs, state, {"attention": a, "source_gates": {"z": a, "r": 1.0 - a}}


def _ids(loaded, src, tgt):
    return ([loaded.src_vocab.encode(s) for s in src], [loaded.tgt_vocab.encode(t) for t in tgt])


def test_forced_decoding_agrees_with_forward(atr_run):
    loaded = load_model(atr_run)
    src_ids, tgt_ids = _ids(loaded, [SRC[0], SRC[2]], [TGT[0], TGT[2]])
    results = forced_decode(loaded.model, src_ids, tgt_ids, batch_tokens=8)  # one pair per batch
    for s, t, fd in zip(src_ids, tgt_ids, results):
        assert fd.src_ids == s and fd.tgt_ids == t
        assert fd.attention.shape == (len(t) + 1, len(s) + 1)
        np.testing.assert_allclose(fd.attention.sum(1), 1.0, atol=1e-5)
        src = torch.tensor([s + [3]])
        tgt_in, tgt_out = torch.tensor([[2] + t]), torch.tensor(t + [3])
        with torch.no_grad():
            logp = torch.log_softmax(loaded.model(src, src != 0, tgt_in).float(), -1)[0]
        np.testing.assert_allclose(fd.token_log_probs, logp[torch.arange(len(t) + 1), tgt_out].numpy(), atol=1e-4)
    batched = forced_decode(loaded.model, src_ids, tgt_ids)  # both in one padded batch
    for a, b in zip(results, batched):
        np.testing.assert_allclose(a.attention, b.attention, atol=1e-5)


def test_trained_atr_states_are_weighted_sums_of_inputs(atr_run):
    model = load_model(atr_run).model
    src = torch.tensor([[5, 9, 30, 44, 12, 3], [7, 8, 3, 0, 0, 0]])
    mask = src != 0
    x = model.encoder_inputs(src)
    for cell, reverse in ((model.encoder.fwd, False), (model.encoder.bwd, True)):
        dep = dependency_weights(cell, x, mask, reverse=reverse)
        torch.testing.assert_close(dep.reconstruct(), dep.states.double(), atol=1e-5, rtol=0)
    annotations = model.encode(src, mask)["annotations"]
    torch.testing.assert_close(dependency_weights(model.encoder.fwd, x, mask).states, annotations[..., :24])

    # decoder: s~_j and s_j as sums over both units' inputs plus the decayed s_0 (not zero)
    tgt_in = torch.tensor([[2, 10, 11, 12], [2, 13, 14, 15]])
    with torch.no_grad():
        trace = model.decoder_trace(src, mask, tgt_in)
    g, _, decay = decoder_chain(trace)
    p = torch.stack([trace["unit1.p"], trace["unit2.p"]], 2).flatten(1, 2).double()
    states = torch.stack([trace["unit1.state"], trace["unit2.state"]], 2).flatten(1, 2).double()
    rebuilt = torch.einsum("btkh,bkh->bth", g, p) + decay * trace["s0"].double().unsqueeze(1)
    torch.testing.assert_close(rebuilt, states, atol=1e-5, rtol=0)
    # the trace is the same computation as step
    memory = model.encode(src, mask)
    state = model.init_state(memory)
    for j in range(tgt_in.size(1)):
        _, state, extras = model.step(tgt_in[:, j], state, memory)
        torch.testing.assert_close(state["s"], trace["unit2.state"][:, j])
        torch.testing.assert_close(extras["attention"], trace["attention"][:, j])


def test_update_gate_alignment_uses_source_gates(atr_run):
    loaded = load_model(atr_run)
    src_ids, tgt_ids = _ids(loaded, [SRC[0]], [TGT[0]])
    plain = forced_decode(loaded.model, src_ids, tgt_ids)[0]
    gated = forced_decode(WithSourceGates(loaded.model), src_ids, tgt_ids)[0]
    np.testing.assert_allclose(gated.source_gates["z"], gated.attention)
    np.testing.assert_allclose(gated.source_gates["r"], 1.0 - gated.attention)
    sp = [loaded.src_vocab.id_to_piece(i) for i in src_ids[0]]
    tp = [loaded.tgt_vocab.id_to_piece(i) for i in tgt_ids[0]]
    links = word_alignment(gated, sp, tp, "update-gate")
    assert sorted(j for _, j in links) == list(range(len(TGT[0].split())))
    assert all(0 <= i < len(SRC[0].split()) for i, _ in links)
    from rnmt.errors import UserError

    with pytest.raises(UserError, match="no source-position gates"):
        word_alignment(plain, sp, tp, "update-gate")


def test_align_command(atr_run, texts, tmp_path, capsys):
    src, tgt = texts
    out = tmp_path / "align.txt"
    assert main(["align", "--model", str(atr_run), "--src", str(src), "--tgt", str(tgt), "--output", str(out),
                 "--threads", "1"]) == 0
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    for k in (0, 2):
        links = [tuple(map(int, link.split("-"))) for link in lines[k].split()]
        assert sorted(j for _, j in links) == list(range(len(TGT[k].split())))  # one link per target word
        assert all(0 <= i < len(SRC[k].split()) for i, _ in links)
    # evaluate-alignment reads it back
    assert main(["evaluate-alignment", "--hyp", str(out), "--gold", str(out)]) == 0
    assert "AER       0.0000" in capsys.readouterr().out
    assert main(["align", "--model", str(atr_run), "--src", str(src), "--tgt", str(tgt), "--threshold", "0.0"]) == 0
    dense = capsys.readouterr().out.split("\n")[0].split()
    assert len(dense) == len(SRC[0].split()) * len(TGT[0].split())


def test_align_update_gate_without_gates_is_a_user_error(atr_run, texts, capsys):
    src, tgt = texts
    assert main(["align", "--model", str(atr_run), "--src", str(src), "--tgt", str(tgt),
                 "--from", "update-gate"]) == 2
    assert "no source-position gates" in capsys.readouterr().err


def test_analyze_command_writes_pictures_and_index(atr_run, texts, tmp_path, capsys):
    src, tgt = texts
    out = tmp_path / "report"
    assert main(["analyze", "--model", str(atr_run), "--src", str(src), "--tgt", str(tgt), "--out", str(out),
                 "--max-sentences", "1", "--threads", "1"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"pearson r\(input gate, forget gate\) encoder \(both directions\): -?\d\.\d{4}", printed)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["sentences"] == 2 and summary["pictured"] == 1
    gates = summary["gates"]
    assert set(gates) == {"encoder.fwd", "encoder.bwd", "encoder (both directions)", "decoder.unit1",
                          "decoder.unit2"}
    assert gates["encoder.fwd"]["pairs"] == sum(len(load_model(atr_run).src_vocab.encode(s)) + 1
                                                for s in SRC if s)
    names = {"gates_encoder.png", "gates_decoder.png", "line00001_attention.png",
             "line00001_encoder_dependency.png", "line00001_encoder_arcs.png",
             "line00001_decoder_dependency.png", "line00001_decoder_arcs.png"}
    assert names <= {p.name for p in out.glob("*.png")}
    page = (out / "index.html").read_text(encoding="utf-8")
    for name in names:
        assert f'src="{name}"' in page
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "http" not in page and "<script" not in page
    assert "Strongest previous token" in page


def test_analyze_translates_without_targets_and_draws_source_gates(atr_run, tmp_path):
    loaded = load_model(atr_run)
    gated = replace(loaded, model=WithSourceGates(loaded.model))
    summary = analyze(gated, ["Y dijo Dios", "sea la luz"], tmp_path / "r", max_sentences=1,
                      search={"greedy": True}, log=lambda *_: None)
    assert summary["target"].startswith("model translation")
    images = summary["per_sentence"][0]["images"]
    assert images == ["line00001_attention.png", "line00001_update_gate.png", "line00001_reset_gate.png"]
    assert summary["gates"] == {}  # the wrapper hides the ATR units
    assert all((tmp_path / "r" / name).is_file() for name in images)


def test_analyze_gru_model_draws_attention_only(tiny_run, texts, tmp_path):
    src, tgt = texts
    out = tmp_path / "gru"
    assert main(["analyze", "--model", str(tiny_run), "--src", str(src), "--tgt", str(tgt), "--out", str(out),
                 "--max-sentences", "2", "--threads", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["gates"] == {} and not summary["encoder_atr"]
    assert sorted(p.name for p in out.glob("*.png")) == ["line00001_attention.png", "line00003_attention.png"]


def test_analyze_passes_over_sentences_too_long_to_picture(tiny_run, tmp_path):
    # a heatmap's pixels grow with the square of the length: five sentences of ~300 subwords
    # drew 8,000 x 8,000 pictures (2.8 GB), one line of 1,500 words was killed at 21 GB
    loaded = load_model(tiny_run)
    short_src, short_tgt = "sea la luz", "let there be light"
    limit = max(len(loaded.src_vocab.encode(short_src)), len(loaded.tgt_vocab.encode(short_tgt)))
    src = [" ".join([short_src] * 5), "luz", short_src, short_src]
    tgt = ["light", " ".join([short_tgt] * 5), short_tgt, short_tgt]
    logged = []
    summary = analyze(loaded, src, tmp_path / "r", tgt, max_sentences=2, max_picture_tokens=limit,
                      log=logged.append)
    assert [s["line"] for s in summary["per_sentence"]] == [3, 4] and summary["pictured"] == 2
    long_src, long_tgt = len(loaded.src_vocab.encode(src[0])), len(loaded.tgt_vocab.encode(tgt[1]))
    assert long_src > limit and long_tgt > limit
    assert summary["not_pictured"] == [  # line 1's target is never needed: its source is too long
        {"line": 1, "source_tokens": long_src, "target_tokens": None},
        {"line": 2, "source_tokens": len(loaded.src_vocab.encode("luz")), "target_tokens": long_tgt}]
    assert any(line.startswith(f"line 1: not pictured ({long_src:,} source subwords;") for line in logged)
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == ["line00003_attention.png",
                                                                       "line00004_attention.png"]
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert f"line 2 ({len(loaded.src_vocab.encode('luz'))} source subwords and {long_tgt} target subwords)" in page
    with pytest.raises(UserError, match="max_picture_tokens must be from 1 to 300, got 0"):
        analyze(loaded, src, tmp_path / "r", tgt, max_picture_tokens=0)


@pytest.fixture(scope="module")
def atr_paper_run(tmp_path_factory, tiny_corpus):
    """The ATR paper's own RNNSearch (``atr-rnnsearch``) with ATR units, trained a few steps."""
    from rnmt.config import config_from_dict
    from rnmt.training.trainer import Trainer

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(arch="atr-rnnsearch", cell="atr")
    tree["train"].update(max_steps=3, validate_every=3)
    out = tmp_path_factory.mktemp("atr_paper_run")
    Trainer(config_from_dict(tree), out, log=lambda *_: None).run()
    return out


def test_analyze_reports_gates_and_dependency_weights_of_atr_rnnsearch(atr_paper_run, texts, tmp_path, capsys):
    src, tgt = texts
    out = tmp_path / "report"
    assert main(["analyze", "--model", str(atr_paper_run), "--src", str(src), "--tgt", str(tgt),
                 "--out", str(out), "--max-sentences", "1", "--threads", "1"]) == 0
    assert re.search(r"pearson r\(input gate, forget gate\) decoder\.unit1: -?\d\.\d{4}", capsys.readouterr().out)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["encoder_atr"] and summary["decoder_atr"]
    assert set(summary["gates"]) == {"encoder.fwd", "encoder.bwd", "encoder (both directions)", "decoder.unit1",
                                     "decoder.unit2"}
    tgt_vocab = load_model(atr_paper_run).tgt_vocab
    assert summary["gates"]["decoder.unit1"]["pairs"] == sum(len(tgt_vocab.encode(t)) + 1 for t in TGT if t)
    entry = summary["per_sentence"][0]
    for side in ("encoder", "decoder"):  # g_k: every position but the first has a strongest previous token
        rows = entry[f"{side}_strongest_previous"]
        assert rows[0]["previous"] is None and all(0 <= r["previous_position"] < r["position"] for r in rows[1:])
        assert all(0 < r["weight"] <= 1 for r in rows[1:])
        assert f"line00001_{side}_dependency.png" in entry["images"]
