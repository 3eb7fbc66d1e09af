"""Lexical shortlists from the command line and the API: built from a corpus, refused
when foreign or malformed, and translations that honour prefixes and constraints."""

from __future__ import annotations

from pathlib import Path

import pytest

import rnmt
from rnmt.errors import UserError
from rnmt.search.shortlist import Shortlist
from rnmt.search.shortlist import load_shortlist as load
from tests.support import GENESIS_LINES, assert_one_line, translate


@pytest.fixture(scope="module")
def vocabs():
    from rnmt.data.vocab import train_spm

    lines = [f"la casa {i} del perro y el gato, the house of the dog and cat {i}" for i in range(200)]
    return train_spm(lines, 60), train_spm(lines, 70)


@pytest.fixture(scope="module")
def shortlist_file(tiny_run, tiny_corpus, tmp_path_factory) -> Path:
    from rnmt.cli import main

    out = tmp_path_factory.mktemp("shortlist") / "list.json"
    train = tiny_corpus["train"]
    assert main(["shortlist", "--model", str(tiny_run), "--src", f"{train}.es", "--tgt", f"{train}.en",
                 "--out", str(out), "--iterations", "3", "--keep", "20"]) == 0
    return out


def test_a_file_comes_back_as_written(vocabs, tmp_path):
    vocab, _ = vocabs
    path = tmp_path / "list.json"
    path.write_text(Shortlist.document([9, 8], [[(10, 0.5), (11, 0.25)]] + [[] for _ in range(len(vocab) - 1)],
                                       vocab, vocab, {"iterations": 5}), encoding="utf-8")
    loaded = load(path, vocab, vocab)
    assert loaded.frequent.tolist() == [9, 8]
    assert loaded.best[0].tolist() == [10, 11] and all(len(b) == 0 for b in loaded.best[1:])


@pytest.mark.parametrize("text, message", [
    ("{not json", "not a shortlist file"),
    ('{"format": "something"}', "not a shortlist file"),
    ('{"format": "rnmt-shortlist", "version": 7}', "version 7"),
    ('[1, 2]', "not a shortlist file"),
    ("[" * 100_000 + "]" * 100_000, "not a shortlist file"),  # nesting deeper than the parser's recursion
    ('{"format": "rnmt-shortlist", "version": 1, "source_vocabulary": "x", "frequent": 1e999999}',
     "another source vocabulary"),
])
def test_a_file_that_is_no_shortlist_is_refused(vocabs, tmp_path, text, message):
    vocab, _ = vocabs
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        load(path, vocab, vocab)
    (tmp_path / "latin1.json").write_bytes(b'{"format": "\xe9"}')  # not UTF-8
    with pytest.raises(UserError, match="not a shortlist file"):
        load(tmp_path / "latin1.json", vocab, vocab)


def test_a_shortlist_of_other_vocabularies_or_pieces_is_refused(vocabs, tmp_path):
    vocab, other = vocabs
    path = tmp_path / "list.json"
    path.write_text(Shortlist.document([9], [[] for _ in range(len(vocab))], vocab, vocab, {}), encoding="utf-8")
    with pytest.raises(UserError, match="another target vocabulary"):
        load(path, vocab, other)
    doc = path.read_text(encoding="utf-8").replace('"frequent":[', '"frequent":["no such piece",')
    path.write_text(doc, encoding="utf-8")
    with pytest.raises(UserError, match="no such piece"):
        load(path, vocab, vocab)
    with pytest.raises(UserError, match="no such shortlist file"):
        load(tmp_path / "missing.json", vocab, vocab)


def test_the_built_file_lists_translations_for_the_corpus_words(shortlist_file, tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    shortlist = load(shortlist_file, model.loaded.src_vocab, model.loaded.tgt_vocab)
    listed = [s for s, b in enumerate(shortlist.best) if len(b)]
    assert len(listed) > 20 and all(len(shortlist.best[s]) <= 20 for s in listed)
    assert len(shortlist.frequent) > 20


def test_a_shortlist_of_every_corpus_word_finds_the_same_translations(shortlist_file, tiny_run):
    """Every target word of the corpus listed: the same outputs, each scored at least as
    high (its softmax normalises over fewer words); switched off, the very same results."""
    model = rnmt.load(tiny_run, device="cpu")
    full = model.translate(GENESIS_LINES, beam=3, nbest=2)
    model.use_shortlist(shortlist_file, frequent=len(model.loaded.tgt_vocab), best=0)
    cut = model.translate(GENESIS_LINES, beam=3, nbest=2)
    assert [[h.text for h in line] for line in cut] == [[h.text for h in line] for line in full]
    assert all(c.score >= f.score - 1e-4 for a, b in zip(cut, full) for c, f in zip(a, b))
    model.use_shortlist(None)
    assert model.translate(GENESIS_LINES, beam=3, nbest=2) == full


def test_outputs_keep_to_the_shortlist_and_to_prefixes_and_constraints(shortlist_file, tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    model.use_shortlist(shortlist_file, frequent=5, best=3)
    shortlist = model._translator.shortlist
    vocab = model.loaded.src_vocab
    for line, hyp in zip(GENESIS_LINES, model.translate(GENESIS_LINES, beam=3, nbest=1)):
        if line:
            import torch

            allowed = set(shortlist.rows(torch.tensor([vocab.encode(line)])).tolist())
            assert set(model.loaded.tgt_vocab.encode(hyp)) <= allowed
    lines = [GENESIS_LINES[0], GENESIS_LINES[2]]
    out = model.translate(lines, beam=3, prefix=["And God said", ""], constraints=[["light"], ["darkness"]])
    assert out[0].startswith("And God said")
    assert "light" in out[0] and "darkness" in out[1]


def test_the_command_translates_with_a_shortlist(shortlist_file, tiny_run, src_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert translate("--model", tiny_run, "--input", src_file, "--output", out, "--shortlist", shortlist_file,
                     "--shortlist-sizes", "50", "10", "--beam", "2") == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(GENESIS_LINES)
    capsys.readouterr()
    assert translate("--model", tiny_run, "--input", src_file, "--shortlist", shortlist_file, "--sample") == 2
    assert_one_line(capsys.readouterr().err, "--shortlist", "--sample")
    assert translate("--model", tiny_run, "--input", src_file, "--shortlist", shortlist_file,
                     "--shortlist-sizes", "-1", "3") == 2
    assert_one_line(capsys.readouterr().err, "--shortlist-sizes")
    assert translate("--model", tiny_run, "--input", src_file, "--shortlist", tmp_path / "none.json") == 2
    assert_one_line(capsys.readouterr().err, "none.json")
    from rnmt.cli import main

    assert main(["serve", "--model", str(tiny_run), "--shortlist", str(tmp_path / "none.json"),
                 "--shortlist-sizes", "3", "-1"]) == 2
    assert_one_line(capsys.readouterr().err, "--shortlist-sizes")  # before the model loads


def test_the_build_command_refuses_bad_input(tiny_run, tmp_path, capsys):
    from rnmt.cli import main

    src, tgt = tmp_path / "a.es", tmp_path / "a.en"
    src.write_text("uno\ndos\n", encoding="utf-8")
    tgt.write_text("one\n", encoding="utf-8")
    base = ["shortlist", "--model", str(tiny_run), "--src", str(src), "--tgt", str(tgt), "--out", str(tmp_path / "o")]
    assert main(base) == 2
    assert_one_line(capsys.readouterr().err, "differ in length")
    tgt.write_text("one\ntwo\n", encoding="utf-8")
    assert main([*base, "--keep", "0"]) == 2
    assert_one_line(capsys.readouterr().err, "--keep")
    assert main([*base, "--min-prob", "1.5"]) == 2
    assert_one_line(capsys.readouterr().err, "--min-prob")
    (tmp_path / "dir").mkdir()
    assert main([*base[:-1], str(tmp_path / "dir")]) == 2
    assert_one_line(capsys.readouterr().err, "is a directory")  # refused before any estimation
    assert not (tmp_path / "o").exists()


def test_a_server_searches_over_its_shortlist(shortlist_file, tiny_run):
    """A server with a shortlist gives the translations of the API's model with the same shortlist."""
    from fastapi.testclient import TestClient

    from rnmt.serve.app import create_app
    from rnmt.serve.settings import ServeSettings
    from tests.serve_support import loaded_model

    loaded = loaded_model(tiny_run)
    shortlist = load(shortlist_file, loaded.src_vocab, loaded.tgt_vocab).with_sizes(5, 3)
    model = rnmt.load(tiny_run, device="cpu")
    model.use_shortlist(shortlist_file, frequent=5, best=3)
    lines = [line for line in GENESIS_LINES if line]
    with TestClient(create_app(loaded, ServeSettings(threads=1), "cpu", shortlist)) as client:
        r = client.post("/translate", json={"texts": lines, "beam": 2})
        assert client.get("/model").json()["shortlist"] == {"frequent": 5, "best": 3}
    assert r.status_code == 200
    assert [t["text"] for t in r.json()["translations"]] == model.translate(lines, beam=2)


def test_an_export_translates_with_a_shortlist(shortlist_file, tiny_run, src_file, tmp_path, capsys):
    """`rnmt translate --model EXPORT --shortlist` (the runtime, no torch in the search) gives
    the PyTorch model's shortlisted translations; an export written without --shortlists,
    and --sample, are refused in one line."""
    from rnmt.cli import main
    from rnmt.export.exporter import export

    export(tiny_run, tmp_path / "export", shortlists=True)
    export(tiny_run, tmp_path / "plain")
    sizes = ["--shortlist-sizes", "1000", "0"]  # the frequent words only: the same list in any batch
    runtime, torch_out = tmp_path / "runtime.txt", tmp_path / "torch.txt"
    assert main(["translate", "--model", str(tmp_path / "export"), "--input", str(src_file), "--output",
                 str(runtime), "--shortlist", str(shortlist_file), *sizes]) == 0
    assert translate("--model", tiny_run, "--input", src_file, "--output", torch_out, "--shortlist", shortlist_file,
                     *sizes) == 0
    assert runtime.read_text(encoding="utf-8") == torch_out.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["translate", "--model", str(tmp_path / "plain"), "--input", str(src_file), "--shortlist",
                 str(shortlist_file)]) == 2
    assert_one_line(capsys.readouterr().err, "rnmt export --shortlists")
    assert main(["translate", "--model", str(tmp_path / "export"), "--input", str(src_file), "--shortlist",
                 str(shortlist_file), "--sample"]) == 2
    assert_one_line(capsys.readouterr().err, "--sample")
