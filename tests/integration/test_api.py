"""The Python interface (rnmt.api) and the README's examples of it, run on a tiny model."""

from __future__ import annotations

import os
import re

import pytest

import rnmt
import rnmt.api
from tests.support import REPO, write_corpus

# The README trains the quickstart config; here it is shrunk to seconds by overrides that
# come after the README's own (later overrides win). Nothing else in the examples changes.
TINY = ["data.vocab.size=300", "data.batch_tokens=600", "data.dev_max_sentences=6", "model.emb_size=16",
        "model.hidden_size=24", "train.max_steps=4", "train.max_minutes=null", "train.validate_every=2",
        "train.log_every=2", "train.threads=1", "train.progress=false", "search.beam=2"]


def api_page_code() -> list:
    """The Python blocks of docs/api.md, the API's page, in order."""
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_python_examples_run(tmp_path, monkeypatch, capsys):
    blocks = api_page_code()
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus", "train", 200)
    write_corpus(tmp_path / "corpus", "dev", 6, offset=5000)
    real_train = rnmt.api.train
    monkeypatch.setattr(rnmt.api, "train", lambda config, overrides=(), **kw: real_train(
        config, [*overrides, *TINY], **kw))
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()

    assert namespace["summary"]["steps"] == 4 and (tmp_path / "runs" / "mine" / "best.safetensors").is_file()
    model, lines, refs = namespace["model"], namespace["lines"], namespace["refs"]
    best = model.translate(lines, beam=5, alpha=0.6)
    assert isinstance(best, list) and len(best) == 2 and all(isinstance(t, str) for t in best)
    assert out[1] == str(best)
    nbest = model.translate(lines, beam=5, nbest=3)
    assert [len(h) for h in nbest] == [3, 3]
    assert all(a.score >= b.score for hyps in nbest for a, b in zip(hyps, hyps[1:]))
    scores = model.score(lines, refs)
    assert all(len(s.tokens) == len(s.token_log_probs) and s.tokens[-1] == "</s>" for s in scores)
    assert scores[0].log_prob == pytest.approx(sum(scores[0].token_log_probs), abs=1e-4)
    links = model.align(lines, refs)
    for pair, src, tgt in zip(links, lines, refs):
        assert {j for _, j in pair} == set(range(len(tgt.split())))  # every target word, once
        assert all(0 <= i < len(src.split()) for i, _ in pair)
    assert set(eval(out[-1])) == {"bleu", "chrf"}


def test_score_and_align_refuse_a_pair_longer_than_they_take_naming_its_line(tiny_run, tmp_path, capsys, monkeypatch):
    # a 5,000-word line scored for three minutes and aligned out of memory
    from rnmt import api
    from rnmt.cli import main

    monkeypatch.setattr(api, "MAX_FORCED_TOKENS", 8)
    model = rnmt.load(tiny_run, device="cpu")
    long = " ".join(["Y dijo Dios"] * 5)
    with pytest.raises(rnmt.UserError, match=r"line 2: \d+ source and \d+ target subwords; .* at most 8 a side"):
        model.score(["sea", long], ["light", "And God said"])
    with pytest.raises(rnmt.UserError, match="line 12: "):
        model.score(["sea", long], ["light", "And God said"], first_line=10)
    with pytest.raises(rnmt.UserError, match="line 3: "):
        model.align(["", "sea", long], ["x", "light", "And God said"])
    src, tgt = tmp_path / "s.es", tmp_path / "t.en"
    src.write_text("sea\nla luz\n" + long + "\n", encoding="utf-8")
    tgt.write_text("light\nthe light\nAnd\n", encoding="utf-8")
    for command in ("score", "align"):
        assert main([command, "--model", str(tiny_run), "--src", str(src), "--tgt", str(tgt),
                     *(["--chunk-lines", "2"] if command == "score" else [])]) == 2
        err = capsys.readouterr().err
        assert "line 3: " in err and err.count("\n") == 1


def test_score_agrees_with_teacher_forcing(tiny_run):
    import torch

    model = rnmt.load(tiny_run, device="cpu")
    src, tgt = ["Y dijo Dios:", "sea la luz"], ["And God said:", "let there be light"]
    scores = model.score(src, tgt)
    # The model's teacher-forced forward pass (the training path) gives the same numbers.
    v, net = model.loaded, model.loaded.model
    for s, t, got in zip(src, tgt, scores):
        src_ids = torch.tensor([v.src_vocab.encode(s) + [net.eos_id]])
        tgt_ids = v.tgt_vocab.encode(t)
        with torch.no_grad():
            logits = net(src_ids, torch.ones_like(src_ids, dtype=torch.bool), torch.tensor([[net.bos_id] + tgt_ids]))
        want = logits.log_softmax(-1)[0].gather(1, torch.tensor([tgt_ids + [net.eos_id]]).T).squeeze(1)
        assert got.token_log_probs == pytest.approx(want.tolist(), abs=1e-4)
        assert got.tokens == [v.tgt_vocab.id_to_piece(i) for i in tgt_ids] + ["</s>"]
    assert model.translate("Y dijo Dios:", beam=1) == model.translate(["Y dijo Dios:"], beam=1)[0]
    assert model.translate(["", "sea la luz"])[0] == ""


def test_min_output_tokens_reaches_every_search(tiny_run, monkeypatch):
    # the tiny model always runs to the length limit, so the searches' own behaviour is
    # tested on a peaked model (tests/unit/test_min_length.py); here, that the option arrives
    from rnmt.search import translator

    seen = []
    wrap = translator.with_min_length
    monkeypatch.setattr(translator, "with_min_length", lambda m, n, max_len: seen.append(n) or wrap(m, n, max_len))
    model = rnmt.load(tiny_run, device="cpu")
    lines = ["sea la luz", "hola"]
    for options in ({}, {"beam": 1}, {"sample": True, "seed": 3}, {"constraints": [["the"], []]}):
        outputs = model.translate(lines, min_output_tokens=4, token_scores=True, **options)
        assert seen.pop() == 4 and all(len(h.pieces) >= 4 + 1 for h in outputs), options  # pieces and </s>
    model.translate(lines)
    assert seen.pop() == 0  # the model's config: off


S, T = ["Y dijo Dios: sea la luz."], ["And God said, Let there be light."]


@pytest.mark.parametrize("call, message", [
    (lambda m: m.translate({"Hola.": 1}), "translate() takes a string or a list of strings, got dict"),
    (lambda m: m.translate({"Hola."}), "got set"),
    (lambda m: m.translate(None), "got NoneType"),
    (lambda m: m.translate(S, greedy="false", beam=5), "option 'greedy' must be True or False, got 'false'"),
    (lambda m: m.translate(S, sample="no"), "option 'sample' must be True or False"),
    (lambda m: m.translate(S, token_scores="no"), "option 'token_scores' must be True or False"),
    (lambda m: m.translate(S, greedy=True, nbest=3), "nbest=3 needs beam search"),
    (lambda m: m.translate(S, greedy=True, coverage=0.2), "coverage=0.2 ranks the finished hypotheses of beam"),
    (lambda m: m.translate(S, sample=True, coverage=0.2), "not with greedy search or sample=True"),
    (lambda m: m.translate(S, coverage=-0.1), "option 'coverage' must be in [0, 10]"),
    (lambda m: m.translate(S, alpha=1e300), "option 'alpha' must be in [0, 10]"),
    (lambda m: m.translate(S, coverage=float("nan")), "option 'coverage' must be a finite number"),
    (lambda m: m.translate(S, sample=True, topk=2.5), "option 'topk' must be an integer, got 2.5"),
    (lambda m: m.translate(S, sample=True, topk=True), "option 'topk' must be an integer, got True"),
    (lambda m: m.translate(S, sample=True, seed="7"), "option 'seed' must be an integer"),
    (lambda m: m.translate(S, sample=True, topp="0.5"), "option 'topp' must be a number"),
    (lambda m: m.translate(S, sample=True, line_offset="x"), "option 'line_offset' must be an integer, got 'x'"),
    (lambda m: m.translate(S, prefix={"And": 1}), "prefix must be one string per line"),
    (lambda m: m.translate(S, min_output_tokens=50, max_output_tokens=5), "must be below max_output_tokens (5)"),
    (lambda m: m.score(S, T, batch_tokens=2.5), "option 'batch_tokens' must be an integer of at least 1, got 2.5"),
    (lambda m: m.score([None], T), "got a list holding NoneType"),
    (lambda m: m.score({"a": 1}, {"b": 2}), "got dict"),
    (lambda m: m.align(S, T, threshold=True), "threshold must be a number in [0, 1], got True"),
    (lambda m: m.align(S, T, batch_tokens="9"), "option 'batch_tokens' must be an integer"),
])
def test_api_arguments_of_the_wrong_kind_are_user_errors(tiny_run, call, message):
    # found by a review: each was a TypeError from deep inside, or a silent wrong result
    # (a dict's keys translated, greedy="false" taken as true, a set in arbitrary order)
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(rnmt.UserError, match=re.escape(message)):
        call(model)


@pytest.mark.parametrize("call, message", [
    (lambda: rnmt.evaluate(["a", "b"], "ab"), "one list of reference strings or a list of such lists, got str"),
    (lambda: rnmt.evaluate(["a", "b"], ["a", None]), "got a list holding NoneType"),
    (lambda: rnmt.evaluate(["a", "b"], [["a", "b"], "ab"]), "got a list holding list"),
    (lambda: rnmt.evaluate(["a"], []), "got no references"),
    (lambda: rnmt.evaluate(["a"], 5), "got int"),
    (lambda: rnmt.evaluate("ab", ["a", "b"]), "evaluate() takes a list of hypothesis strings, got str"),
    (lambda: rnmt.evaluate(["a"], ["a"], metrics="bleu"), "metrics must be a list of metric names, got str"),
    (lambda: rnmt.evaluate(["a"], ["a"], metrics=[]), "metrics must name at least one of bleu, chrf, ter"),
    (lambda: rnmt.evaluate(["a"], ["a"], lowercase="no"), "option 'lowercase' must be True or False"),
    (lambda: rnmt.load(None), "load() takes a path or a list of paths, got NoneType"),
    (lambda: rnmt.load("x", device="meta"), "device must be auto, cpu, cuda or cuda:N, got 'meta'"),
    (lambda: rnmt.load("x", int8="no"), "option 'int8' must be True or False"),
    (lambda: rnmt.train(5), "train() takes a config path, a built-in config name or a dict, got int"),
    (lambda: rnmt.train("quickstart", overrides="train.max_steps=5"), "overrides must be a list of 'key.path=value'"),
])
def test_module_functions_check_their_arguments(call, message):
    with pytest.raises(rnmt.UserError, match=re.escape(message)):
        call()


def test_api_errors_are_user_errors(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(rnmt.UserError, match="2 source sentences but 1 target"):
        model.score(["a", "b"], ["a"])
    with pytest.raises(rnmt.UserError, match="unknown translate option"):
        model.translate(["a"], bem=3)
    with pytest.raises(rnmt.UserError, match=re.escape("'beam' must be in [1, 8192]")):
        model.translate(["a"], beam=0)
    with pytest.raises(rnmt.UserError, match="'min_output_tokens' must be"):
        model.translate(["a"], min_output_tokens=-1)
    with pytest.raises(rnmt.UserError, match="no such file|not found"):
        rnmt.load(tiny_run / "missing.safetensors")
    with pytest.raises(rnmt.UserError, match="reference 1"):
        rnmt.evaluate(["a", "b"], ["a"])
    assert rnmt.evaluate(["the cat sat on the mat"], [["the cat sat on the mat"]])["bleu"] == pytest.approx(100)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["score", "align"])
def test_a_full_disk_under_score_and_align_names_the_file(command, tiny_run, tmp_path, capsys):
    from rnmt.cli import main

    src, tgt = tmp_path / "s.es", tmp_path / "t.en"
    src.write_text("sea\nla luz\n", encoding="utf-8")
    tgt.write_text("light\nthe light\n", encoding="utf-8")
    assert main([command, "--model", str(tiny_run), "--src", str(src), "--tgt", str(tgt), "--output", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: /dev/full: no space left on device while writing the") and err.count("\n") == 1
