"""The browser libraries the page ships: onnxruntime-web and a sentencepiece build.

They come from npm (web/package.json, pinned by web/package-lock.json; ``npm ci`` in web/,
which ``make test`` runs), and are turned into what a page opened from the file system can
load. Such a page may run ``<script>`` tags but not fetch files or import modules beside
it, so:

- onnxruntime-web's classic build (``ort.wasm.min.js``) is copied as is; its WebAssembly
  binary and its loader module are shipped as data (base64 in a script) that the page
  hands to ``env.wasm.wasmBinary`` and, through a ``blob:`` URL, ``env.wasm.wasmPaths``;
- the sentencepiece build (@sctg/sentencepiece-js) is an ES module that imports Node's
  ``fs``; its self-contained emscripten factory (the WebAssembly inlined) is cut out of it
  into a classic script, and the page's own code (rnmt-text.js) drives it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rnmt.errors import UserError

ORT_PACKAGE, ORT_VERSION = "onnxruntime-web", "1.30.0"
SPM_PACKAGE, SPM_VERSION = "@sctg/sentencepiece-js", "1.3.3"
ORT_SCRIPT = "dist/ort.wasm.min.js"  # the classic (non-module) build: wasm backend only
ORT_WASM = "dist/ort-wasm-simd-threaded.wasm"
ORT_LOADER = "dist/ort-wasm-simd-threaded.mjs"
SPM_MODULE = "dist/index.js"
SPM_FACTORY = "var createSentencePieceModule="


@dataclass(frozen=True)
class Assets:
    """The library files a page needs, read from a node_modules folder."""

    ort_script: bytes
    ort_wasm: bytes
    ort_loader: bytes
    spm_script: bytes


def default_modules() -> Path:
    """Where ``npm ci`` in the source tree's web/ folder puts the libraries."""
    return Path(__file__).resolve().parents[2] / "web" / "node_modules"


def find_modules(explicit: Optional[str] = None) -> Path:
    """The node_modules folder to read: ``explicit`` (``--web-modules``), else the source
    tree's web/node_modules."""
    return Path(explicit) if explicit else default_modules()


def _package_dir(modules: Path, name: str, version: str) -> Path:
    folder = modules / name
    meta = folder / "package.json"
    hint = (f"run `npm ci` in rnmt's web/ folder (web/package-lock.json), or give --web-modules, a "
            f"node_modules folder holding {name} {version}")
    if not meta.is_file():
        raise UserError(f"{folder}: the in-browser page needs the npm package {name} {version}: {hint}")
    try:
        found = json.loads(meta.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        raise UserError(f"{meta}: not a readable package.json: {hint}") from None
    if found != version:
        raise UserError(f"{meta}: {name} is version {found}, the page is built for {version}: {hint}")
    return folder


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror}); reinstall with `npm ci` in web/") from None


def sentencepiece_script(module_text: str, origin: str) -> str:
    """The classic script defining ``createSentencePieceModule`` from the package's ES
    module: its factory is one self-contained statement; ``import.meta.url`` (a module-only
    expression, used there only to find files the inlined build never fetches) becomes
    undefined."""
    start = module_text.find(SPM_FACTORY)
    if start < 0:
        raise UserError(f"{origin}: no '{SPM_FACTORY}' statement: not the sentencepiece build the page expects")
    end = module_text.find("\n", start)
    factory = module_text[start:end if end >= 0 else len(module_text)].replace("import.meta.url", "undefined")
    if "import.meta" in factory or "data:application/octet-stream;base64," not in factory:
        raise UserError(f"{origin}: its factory is not self-contained: not the sentencepiece build the page expects")
    return (f"// {SPM_PACKAGE} {SPM_VERSION} (Apache-2.0): the emscripten build of Google's sentencepiece\n"
            f"// (Apache-2.0), its factory cut out of {SPM_MODULE} as a classic script by rnmt export --web.\n"
            f"{factory}\nwindow.createSentencePieceModule = createSentencePieceModule;\n")


def load_assets(modules: Path) -> Assets:
    """The page's libraries from ``modules``; one `UserError` line naming what is missing."""
    ort = _package_dir(modules, ORT_PACKAGE, ORT_VERSION)
    spm = _package_dir(modules, SPM_PACKAGE, SPM_VERSION)
    spm_path = spm / SPM_MODULE
    spm_text = _read(spm_path).decode("utf-8", errors="strict")
    return Assets(ort_script=_read(ort / ORT_SCRIPT), ort_wasm=_read(ort / ORT_WASM),
                  ort_loader=_read(ort / ORT_LOADER),
                  spm_script=sentencepiece_script(spm_text, str(spm_path)).encode("utf-8"))
