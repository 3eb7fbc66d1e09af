"""`rnmt export --web`: the page, opened from the file system in headless chromium (no
server), translates as the Python runtime does, and a damaged copy says so in one line.

A small model is trained for a few hundred updates on the bundled sample (outputs that
vary from line to line, unlike an untrained model's), exported with its page, and the
page's beam search (the manifest's beam and length penalty) is compared with
`rnmt translate --model EXPORT` (the torch-free runtime) on 20 test lines.

Skips (with the reason) when Playwright, Debian's chromium or the page's npm packages
(npm ci in web/, which `make test` runs) are missing.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, FLAGS, browser_or_skip
from tests.support import REPO, SAMPLE, assert_one_line_error, run_rnmt

TRAIN = ["train.max_steps=250", "train.warmup_steps=50", "train.validate_every=1000", "train.log_every=50",
         "train.threads=1", "train.progress=false", "model.emb_size=64", "model.hidden_size=64",
         "data.vocab.size=1000", "data.batch_tokens=2000",
         "runtime.kernels=false"]  # plain PyTorch: no C++ build inside the training's time limit
LINES = 20


def _browser_or_skip():
    sync_playwright = browser_or_skip()
    from rnmt.web import assets

    modules = assets.find_modules()
    if not (modules / assets.ORT_PACKAGE / "package.json").is_file():
        pytest.skip(f"the page's npm packages are not in {modules}: run npm ci in web/ (make test does)")
    return sync_playwright


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """An export of a small trained model with its page in site/web."""
    _browser_or_skip()
    root = tmp_path_factory.mktemp("web")
    sets = [arg for s in TRAIN for arg in ("--set", s)]
    trained = run_rnmt("train", REPO / "configs" / "quickstart.yaml", "--out", root / "run", *sets)
    assert trained.returncode == 0, trained.stderr[-2000:]
    exported = run_rnmt("export", root / "run", "--web", root / "site")
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert "wrote the in-browser page" in exported.stderr
    return root / "site"


def _open(browser, page_dir: Path):
    page = browser.new_page()
    requests = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto((page_dir / "index.html").as_uri(), timeout=60_000)
    page.wait_for_function("['ready', 'error'].includes(document.body.dataset.state)", timeout=150_000)
    return page, requests


def test_web_export_translates_offline_as_the_runtime_does(site, tmp_path):
    sync_playwright = _browser_or_skip()
    sample = (SAMPLE / "test.es").read_text(encoding="utf-8").splitlines()
    # 20 verses, a blank line, and 15 verses as one line: longer than the input limit, so cut
    # into pieces at the source ids the page's split tables mark, and the translations joined
    lines = sample[:LINES] + ["", " ".join(sample[LINES:LINES + 15])]
    src = tmp_path / "in.es"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ran = run_rnmt("translate", "--model", site, "--input", src, "--output", tmp_path / "out.en")
    assert ran.returncode == 0, ran.stderr
    expected = (tmp_path / "out.en").read_text(encoding="utf-8").splitlines()
    assert len(expected) == len(lines) and len(set(expected[:LINES])) > 5  # a model whose outputs vary
    assert expected[LINES] == "" and "pieces" in ran.stderr  # the long line was split

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS, timeout=60_000)
        try:
            page, requests = _open(browser, site / "web")
            assert page.evaluate("document.body.dataset.state") == "ready", page.text_content("#status")
            assert "beam 5" in page.text_content("#model-info")
            got = page.evaluate("lines => window.rnmtPage.translateLines(lines)", lines)
            assert got["outputs"] == expected

            page.fill("#source", "\n".join(lines[:3]))
            page.click("#translate")
            page.wait_for_function("document.body.dataset.state === 'done'", timeout=120_000)
            assert page.locator("#output p.translation").all_text_contents() == expected[:3]
            assert re.match(r"3 lines in [\d.]+ s: \d+ ms per sentence", page.text_content("#timing"))
            page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
            # nothing but the page's own files: no server, no network
            assert requests and all(u.startswith(("file://", "blob:", "data:")) for u in requests), requests
        finally:
            browser.close()


def _flip_one_character(path: Path) -> None:
    text = path.read_text(encoding="ascii")
    i = len(text) // 2
    path.write_text(text[:i] + ("A" if text[i] != "A" else "B") + text[i + 1:], encoding="ascii")


def _swap(page: Path, source: str, target: str) -> None:
    """Register ``source``'s bytes under ``target``'s name: well-formed data, the wrong file."""
    text = (page / "data" / f"{source}.js").read_text(encoding="ascii")
    (page / "data" / f"{target}.js").write_text(text.replace(f'"{source}"', f'"{target}"', 1), encoding="ascii")


@pytest.mark.parametrize("damage, message", [
    (lambda d: _flip_one_character(d / "data" / "step.onnx.js"),
     r"^error: data/step\.onnx\.js: (sha256 \w+\.\.\. differs from the export's|not valid gzipped base64 data)"),
    (lambda d: _swap(d, "init.onnx", "step.onnx"),
     r"^error: data/step\.onnx\.js: sha256 \w+\.\.\. differs from the export's \w+\.\.\.: the file is damaged"),
    (lambda d: (d / "data" / "encoder.onnx.js").write_text("rnmtFile(\"encoder.onnx\", \"AAA", encoding="ascii"),
     r"^error: data/encoder\.onnx\.js: did not load"),
    (lambda d: (d / "vendor" / "ort.wasm.min.js").unlink(), r"^error: vendor/ort\.wasm\.min\.js: missing"),
])
def test_web_export_damaged_copy_shows_one_error_line(site, tmp_path, damage, message):
    sync_playwright = _browser_or_skip()
    copy = tmp_path / "web"
    shutil.copytree(site / "web", copy)
    damage(copy)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS, timeout=60_000)
        try:
            page, _ = _open(browser, copy)
            assert page.evaluate("document.body.dataset.state") == "error"
            assert page.locator(".error").count() == 1
            assert re.match(message, page.text_content("#status")), page.text_content("#status")
            assert page.is_disabled("#translate")
        finally:
            browser.close()


def test_web_export_refuses_a_damaged_export_in_one_line(site, tmp_path):
    copy = tmp_path / "exp"
    shutil.copytree(site, copy, ignore=shutil.ignore_patterns("web"))
    step = copy / "step.onnx"
    step.write_bytes(step.read_bytes()[:-1])
    assert_one_line_error(run_rnmt("export", "--web", copy), "step.onnx: sha256")
    assert not (copy / "web").exists()
