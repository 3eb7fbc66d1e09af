"""``rnmt export --web``: a static page that translates with an export, offline.

The page is a folder: index.html, the page's code (rnmt-page.js, rnmt-text.js,
rnmt-search.js), the libraries (vendor/, `rnmt.web.assets`) and data scripts (data/), each
registering one file, gzipped, as base64 (``rnmtFile(name, base64)``): the export's manifest, graphs
and vocabularies, onnxruntime's WebAssembly binary and loader, and the source vocabulary's
split tables. Scripts rather than fetched files, because a page opened from the file
system (file://) may run scripts beside it but not read them. The page checks every file
against the export's SHA-256 (or its own record) before it uses any, so a damaged copy
shows one error line instead of translating wrongly or hanging.

The folder is written under a temporary name and renamed into place, so a failure leaves
no half-written page; an existing non-empty folder is replaced only with ``force``.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from rnmt.errors import UserError, write_failure
from rnmt.io.directories import replace_directory
from rnmt.web import assets as lib
from rnmt.web.export_dir import ExportDir, read_export
from rnmt.web.tables import split_tables

SOURCES = Path(__file__).resolve().parent
PAGE_CODE = ("rnmt-search.js", "rnmt-text.js", "rnmt-page.js")
SPLIT_TABLES = "split-tables.json"
ORT_WASM = "ort-wasm-simd-threaded.wasm"
ORT_LOADER = "ort-wasm-simd-threaded.mjs"


@dataclass(frozen=True)
class WrittenPage:
    """What `write_page` wrote: the folder and each file's size in bytes."""

    directory: Path
    sizes: Dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.sizes.values())


def page_dir_for(web: Path, export: Path) -> Path:
    """The page's folder: ``web``, or ``web/web`` when ``web`` is the export itself (the page
    sits inside the export, in its own folder)."""
    same = web.resolve() == export.resolve()
    return web / "web" if same else web


def _data_script(name: str, data: bytes) -> bytes:
    # gzip first: onnxruntime's WebAssembly binary shrinks from 14 MB to 3.7 MB (the graphs'
    # weights hardly shrink); the page inflates it with the browser's DecompressionStream
    encoded = base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")
    return f"rnmtFile({json.dumps(name)}, \"{encoded}\");\n".encode("ascii")


def _files(export: ExportDir, assets: lib.Assets) -> Dict[str, bytes]:
    """Every file of the page, by its path inside the page folder."""
    files: Dict[str, bytes] = {}
    data = {"manifest.json": export.manifest_bytes, **export.payload,
            SPLIT_TABLES: json.dumps(split_tables(export.src_vocab_bytes)).encode("utf-8"),
            ORT_WASM: assets.ort_wasm, ORT_LOADER: assets.ort_loader}
    record = {}
    for name, content in data.items():
        script = f"data/{name}.js"
        files[script] = _data_script(name, content)
        record[name] = {"script": script, "sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content)}
    files["vendor/ort.wasm.min.js"] = assets.ort_script
    files["vendor/sentencepiece.js"] = assets.spm_script
    for name in PAGE_CODE:
        files[name] = (SOURCES / name).read_bytes()
    page = {"files": record, "split_tables": SPLIT_TABLES, "ort_wasm": ORT_WASM, "ort_loader": ORT_LOADER,
            "ort_script": "vendor/ort.wasm.min.js", "search_defaults": export.search_defaults,
            "libraries": {lib.ORT_PACKAGE: lib.ORT_VERSION, lib.SPM_PACKAGE: lib.SPM_VERSION}}
    files["index.html"] = _index_html(page, ["vendor/ort.wasm.min.js", "vendor/sentencepiece.js",
                                             *(r["script"] for r in record.values()), *PAGE_CODE])
    return files


def _index_html(page: dict, scripts: List[str]) -> bytes:
    template = (SOURCES / "index.html").read_text(encoding="utf-8")
    # JSON inside <script>: "</" would end the element, so it is escaped
    page_json = json.dumps(page, ensure_ascii=False, sort_keys=True).replace("</", "<\\/")
    tags = "\n".join(f'<script src="{src}" onerror="rnmtScriptFailed(this)"></script>' for src in scripts)
    return template.replace("{{PAGE_JSON}}", page_json).replace("{{SCRIPTS}}", tags).encode("utf-8")


def write_page(export_dir: str | os.PathLike, web_dir: str | os.PathLike, force: bool = False,
               modules: Optional[str] = None) -> WrittenPage:
    """Write the page for the export ``export_dir`` into ``web_dir`` (see `page_dir_for`)."""
    export = read_export(Path(export_dir))
    target = page_dir_for(Path(web_dir), Path(export_dir))
    if target.exists() and not target.is_dir():
        raise UserError(f"{target}: exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise UserError(f"{target}: not empty; pass --force to replace the page in it")
    files = _files(export, lib.load_assets(lib.find_modules(modules)))
    _write_atomically(target, files)
    return WrittenPage(target, {name: len(content) for name, content in sorted(files.items())})


def _write_atomically(target: Path, files: Dict[str, bytes]) -> None:
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    except OSError as exc:
        what, advice = write_failure(exc)
        raise UserError(f"{parent}: {what} while writing the page: {advice}") from None
    try:
        for name, content in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        os.chmod(staging, 0o755)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        what, advice = write_failure(exc)
        raise UserError(f"{target}: {what} while writing the page: {advice}") from None
    try:
        replace_directory(staging, target, "writing the page")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
