"""The in-browser page's files, written from an export directory (no browser here: the page
itself runs in tests/system/test_web_export.py): what it ships, the checks on the export it
is written from, and the rules for where it goes."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest

from rnmt.data.vocab import load_vocab
from rnmt.errors import UserError
from rnmt.search.limits import ends_sentence
from rnmt.web import assets
from rnmt.web.command import plan
from rnmt.web.page import page_dir_for, write_page
from rnmt.web.tables import runs, split_tables

MODULES = assets.default_modules()
needs_modules = pytest.mark.skipif(not (MODULES / assets.ORT_PACKAGE).is_dir(),
                                   reason="the page's npm packages are not installed: npm ci in web/ (make test does)")


def fake_export(root: Path, vocab: Path, **search) -> Path:
    """An export directory whose graphs are placeholder bytes (the writer copies them and
    never parses them) and whose vocabulary is a real one."""
    root.mkdir(parents=True)
    files = {"encoder.onnx": b"enc", "init.onnx": b"init", "step.onnx": b"step", "spm.model": vocab.read_bytes()}
    for name, data in files.items():
        (root / name).write_bytes(data)
    manifest = {"format": "rnmt-export", "format_version": 1, "architecture": "rnnsearch",
                "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3},
                "vocab": {"src": "spm.model", "tgt": "spm.model"},
                "graphs": {"encoder": "encoder.onnx", "init": "init.onnx", "step": "step.onnx"},
                "memory": ["annotations"], "state": ["s"], "beam_shares_memory": True,
                "search_defaults": {"beam": 4, "alpha": 1.0, **search},
                "files": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def registered(script: Path) -> tuple[str, bytes]:
    match = re.fullmatch(r'rnmtFile\("([^"]+)", "([A-Za-z0-9+/=]*)"\);\n', script.read_text(encoding="ascii"))
    assert match, script
    return match.group(1), gzip.decompress(base64.b64decode(match.group(2)))


def page_record(page: Path) -> dict:
    html = (page / "index.html").read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="rnmt-page">(.*?)</script>', html, re.S)
                      .group(1).replace("<\\/", "</"))


@needs_modules
def test_the_page_ships_every_file_as_a_checked_script(tmp_path, tiny_run):
    export = fake_export(tmp_path / "exp", tiny_run / "spm.model")
    written = write_page(export, tmp_path / "page")
    page = tmp_path / "page"
    assert written.directory == page and written.total == sum(p.stat().st_size for p in page.rglob("*") if p.is_file())
    record = page_record(page)
    listed = json.loads((export / "manifest.json").read_text())["files"]
    for name in ("encoder.onnx", "init.onnx", "step.onnx", "spm.model"):  # the export's bytes, its digests
        got_name, data = registered(page / record["files"][name]["script"])
        assert got_name == name and data == (export / name).read_bytes()
        assert record["files"][name]["sha256"] == listed[name]
    _, manifest = registered(page / "data/manifest.json.js")
    assert manifest == (export / "manifest.json").read_bytes()
    _, wasm = registered(page / "data/ort-wasm-simd-threaded.wasm.js")
    assert wasm[:4] == b"\0asm"
    assert record["search_defaults"]["beam"] == 4 and record["search_defaults"]["alpha"] == 1.0
    assert record["search_defaults"]["max_len_ratio"] == 1.5  # rnmt translate's default where the export has none
    spm = (page / "vendor/sentencepiece.js").read_text(encoding="utf-8")
    assert "import.meta" not in spm and not re.search(r"^\s*(import|export)\b", spm, re.M)
    html = (page / "index.html").read_text(encoding="utf-8")
    for script in record["files"].values():  # loaded by a <script> tag that reports a failure
        assert f'<script src="{script["script"]}" onerror="rnmtScriptFailed(this)">' in html


def test_split_tables_hold_the_ids_rnmt_cuts_at(tiny_run):
    vocab = load_vocab(tiny_run / "spm.model")
    tables = split_tables(vocab.to_bytes())

    def ids(table):
        return {first + k for first, count in table for k in range(count)}

    pieces = vocab.pieces
    assert ids(tables["word_starts"]) == {i for i, p in enumerate(pieces) if p.startswith("\u2581")}
    assert ids(tables["sentence_ends"]) == {i for i, p in enumerate(pieces) if ends_sentence(p)}
    assert runs([True, True, False, True]) == [[0, 2], [3, 1]] and runs([False]) == []


@pytest.mark.parametrize("damage, needle", [
    (lambda d: (d / "manifest.json").unlink(), "manifest.json: missing"),
    (lambda d: (d / "manifest.json").write_text("{", encoding="utf-8"), "manifest.json: not valid UTF-8 JSON"),
    (lambda d: (d / "step.onnx").write_bytes(b"stepX"), "step.onnx: sha256"),
    (lambda d: (d / "spm.model").unlink(), "spm.model: missing from the export directory"),
    (lambda d: _edit(d, format_version=2), "format version 2 is newer"),
    (lambda d: _edit(d, format="something"), "not an rnmt export"),
    (lambda d: _edit(d, search_defaults={"coverage": 0.2}), "does not implement GNMT's coverage penalty"),
    (lambda d: _edit(d, search_defaults={"beam": "five"}), "search_defaults.beam must be int"),
])
def test_a_damaged_or_foreign_export_is_one_line_naming_the_file(tmp_path, tiny_run, damage, needle):
    export = fake_export(tmp_path / "exp", tiny_run / "spm.model")
    damage(export)
    with pytest.raises(UserError) as caught:
        write_page(export, tmp_path / "page", modules=str(tmp_path / "no-modules"))
    assert needle in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "page").exists()


def _edit(export: Path, **changes) -> None:
    path = export / "manifest.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_missing_npm_packages_say_how_to_install_them(tmp_path, tiny_run):
    export = fake_export(tmp_path / "exp", tiny_run / "spm.model")
    with pytest.raises(UserError, match=r"npm ci.*web/") as caught:
        write_page(export, tmp_path / "page", modules=str(tmp_path / "nowhere"))
    assert "onnxruntime-web 1.30.0" in str(caught.value)


def test_the_sentencepiece_build_is_recognised_or_refused():
    with pytest.raises(UserError, match="not the sentencepiece build"):
        assets.sentencepiece_script("export const x = 1;\n", "index.js")
    factory = ('var createSentencePieceModule=(()=>{var n=import.meta.url;'
               'var f="data:application/octet-stream;base64,AA"})();')
    script = assets.sentencepiece_script("import * as fs from 'fs';\n" + factory + "\nexport {};\n", "index.js")
    assert "import.meta" not in script and "from 'fs'" not in script
    assert script.rstrip().endswith("window.createSentencePieceModule = createSentencePieceModule;")


@needs_modules
def test_a_page_folder_in_use_is_replaced_only_with_force(tmp_path, tiny_run):
    export = fake_export(tmp_path / "exp", tiny_run / "spm.model")
    page = tmp_path / "page"
    page.mkdir()
    (page / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty; pass --force"):
        write_page(export, page)
    assert (page / "notes.txt").read_text() == "mine"
    write_page(export, page, force=True)
    assert (page / "index.html").is_file() and not (page / "notes.txt").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left behind
    write_page(export, export)  # into the export itself: its own folder, the export untouched
    assert page_dir_for(export, export) == export / "web" and (export / "web" / "index.html").is_file()
    assert sorted(p.name for p in export.iterdir()) == ["encoder.onnx", "init.onnx", "manifest.json", "spm.model",
                                                        "step.onnx", "web"]


def test_where_the_export_and_the_page_come_from(tmp_path):
    p = plan("run", "exp", "page")
    assert (p.model, p.out, p.web) == ("run", "exp", "page")
    p = plan("run", None, "site")
    assert (p.model, p.out, p.web) == ("run", "site", "site")  # export into DIR, page into DIR/web
    p = plan(None, None, "exp")
    assert (p.model, p.out, p.web) == (None, "exp", "exp")  # the page of an existing export
    p = plan(None, "exp", "page")
    assert (p.model, p.out, p.web) == (None, "exp", "page")
    export = tmp_path / "exp"
    export.mkdir()
    (export / "manifest.json").write_text("{}")
    p = plan(str(export), None, "page")  # an export given where a run goes: its page
    assert (p.model, p.out, p.web) == (None, str(export), "page")
    with pytest.raises(UserError, match="--out DIR"):
        plan("run", None, None)
    with pytest.raises(UserError, match="RUN_OR_CHECKPOINT"):
        plan(None, None, None)
