"""Ensemble decoding: mean log-probabilities per step, beam search unchanged, vocabulary checks."""

import pytest
import torch

from rnmt.cli import main
from rnmt.data import train_vocabs
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import read_model_file
from rnmt.models import build_model, load_model
from rnmt.search.ensemble import Ensemble, load_ensemble
from rnmt.search.translator import Translator
from rnmt.training.checkpoint import save_model

LINES = ["Y dijo Dios:", "sea la luz", "En el principio crió Dios los cielos y la tierra."]


def test_step_averages_the_members_log_probabilities(tiny_run):
    a = load_model(tiny_run / "ckpt-3.safetensors").model
    b = load_model(tiny_run / "ckpt-6.safetensors").model
    ens = Ensemble([a, b]).eval()
    src = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])
    mask = src != 0
    prev = torch.full((2,), 2)
    with torch.no_grad():
        lp, state, extras = ens.step(prev, ens.init_state(ens.encode(src, mask)), ens.encode(src, mask))
        outs = []
        for m in (a, b):
            mem = m.encode(src, mask)
            outs.append(m.step(prev, m.init_state(mem), mem))
    assert torch.allclose(lp, (outs[0][0] + outs[1][0]) / 2, atol=1e-6)
    assert set(state) == {f"{i}.{k}" for i, o in enumerate(outs) for k in o[1]}
    if "attention" in outs[0][2]:
        assert torch.allclose(extras["attention"], (outs[0][2]["attention"] + outs[1][2]["attention"]) / 2)


def test_an_ensemble_of_a_model_with_itself_translates_like_the_model(tiny_run):
    single = load_model(tiny_run)
    ens = load_ensemble([tiny_run, tiny_run])
    assert isinstance(ens.model, Ensemble)
    t1 = Translator(single.model, single.src_vocab, single.tgt_vocab, single.config.search)
    t2 = Translator(ens.model, ens.src_vocab, ens.tgt_vocab, ens.config.search)
    for kwargs in ({"greedy": True}, {"beam": 3, "nbest": 2}):
        r1, r2 = t1.translate(LINES, **kwargs), t2.translate(LINES, **kwargs)
        assert [[h.text for h in n] for n in r1] == [[h.text for h in n] for n in r2]
        assert [h.score for n in r1 for h in n] == pytest.approx([h.score for n in r2 for h in n], abs=1e-4)


def test_translate_command_with_two_models(tiny_run, tmp_path):
    src = tmp_path / "in.es"
    src.write_text("\n".join(LINES) + "\n\n", encoding="utf-8")
    out = tmp_path / "out.en"
    assert main(["translate", "--model", str(tiny_run / "ckpt-3.safetensors"), "--model",
                 str(tiny_run / "ckpt-6.safetensors"), "--input", str(src), "--output", str(out),
                 "--beam", "2"]) == 0
    assert len(out.read_text(encoding="utf-8").split("\n")) == len(LINES) + 2


def test_members_with_another_target_vocabulary_are_refused(tiny_run, tiny_corpus, tmp_path, capsys):
    ref = read_model_file(tiny_run / "best.safetensors")
    src_vocab, _ = train_vocabs(tiny_corpus["train"] + ".es", tiny_corpus["train"] + ".en", tmp_path,
                                joint=True, src_size=250, tgt_size=250)
    model = build_model(ref.config.model, src_vocab.size, src_vocab.size)
    other = tmp_path / "other.safetensors"
    save_model(other, model, ref.config, {"src": src_vocab.to_bytes(), "tgt": src_vocab.to_bytes()})
    with pytest.raises(UserError, match=r"best\.safetensors and .*other\.safetensors: their target vocabularies"):
        load_ensemble([tiny_run, other])
    assert main(["translate", "--model", str(tiny_run), "--model", str(other), "--input", "/dev/null"]) == 2
    assert "target vocabularies differ" in capsys.readouterr().err
