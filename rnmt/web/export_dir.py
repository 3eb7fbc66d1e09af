"""An export directory as the page needs it: the manifest, checked, and the bytes of the
files the page ships (graphs and vocabularies), each matching the manifest's SHA-256.

The format is the one `rnmt export` writes (docs/deploy.md, "Export"). Nothing from the
directory is run: the manifest is JSON, the other files are bytes copied into the page.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict

from rnmt.errors import UserError, shown
from rnmt.search.limits import MAX_OUTPUT_TOKENS

FORMAT, FORMAT_VERSION = "rnmt-export", 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20
# What the page's search implements; any other search default it cannot honour is refused
# rather than translated differently from `rnmt translate` (the Python runtime).
SEARCH_KEYS = {"beam": (int, 5), "alpha": (float, 0.6), "normalize": (str, "gnmt"),
               "max_len_ratio": (float, 1.5), "max_len_offset": (int, 10),
               "max_output_tokens": (int, MAX_OUTPUT_TOKENS), "max_input_tokens": (int, None)}
UNSUPPORTED_WHEN_SET = {"coverage": "GNMT's coverage penalty", "no_repeat_ngram": "blocking repeated n-grams",
                        "min_output_tokens": "a minimum output length"}
NORMALIZE = ("gnmt", "length", "none")


@dataclass(frozen=True)
class ExportDir:
    path: Path
    manifest: Dict[str, Any]
    manifest_bytes: bytes
    payload: Dict[str, bytes]  # file name -> bytes: the graphs and the vocabularies
    src_vocab_bytes: bytes
    search_defaults: Dict[str, Any]


def _manifest(path: Path) -> tuple[bytes, Dict[str, Any]]:
    file = path / MANIFEST
    if not path.is_dir():
        raise UserError(f"{path}: not a directory (an export directory written by rnmt export)")
    try:
        raw = file.read_bytes() if file.stat().st_size <= MAX_MANIFEST_BYTES else None
    except FileNotFoundError:
        raise UserError(f"{file}: missing: {path} is not an export directory") from None
    except OSError as exc:
        raise UserError(f"{file}: cannot read it ({exc.strerror})") from None
    if raw is None:
        raise UserError(f"{file}: larger than a manifest ({MAX_MANIFEST_BYTES:,} bytes at most): not an rnmt export")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UserError(f"{file}: not valid UTF-8 JSON: not an rnmt export manifest") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f"{file}: format is not {FORMAT!r}: not an rnmt export")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"{file}: format_version must be a positive integer, got {shown(version)}")
    if version > FORMAT_VERSION:
        raise UserError(f"{file}: format version {version} is newer than this rnmt reads ({FORMAT_VERSION})")
    return raw, data


def _checked_file(path: Path, name: Any, files: Dict[str, Any], what: str) -> bytes:
    manifest = path / MANIFEST
    if not isinstance(name, str) or name not in files or "/" in name or "\\" in name or name in ("", ".", ".."):
        raise UserError(f"{manifest}: {what} names {shown(name)}, which 'files' does not list")
    file = path / name
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{file}: missing from the export directory (its manifest lists it)") from None
    except OSError as exc:
        raise UserError(f"{file}: cannot read it ({exc.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    if not isinstance(files[name], str) or digest != files[name].lower():
        raise UserError(f"{file}: sha256 {digest[:12]}... differs from the manifest's: "
                        f"the file is damaged or was changed after export")
    return data


def _search_defaults(section: Any, manifest: Path) -> Dict[str, Any]:
    if not isinstance(section, dict):
        raise UserError(f"{manifest}: 'search_defaults' must be an object")
    values: Dict[str, Any] = {}
    for key, (kind, default) in SEARCH_KEYS.items():
        value = section.get(key, default)
        number = kind in (int, float) and isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and not (number if kind is not str else isinstance(value, str)):
            raise UserError(f"{manifest}: search_defaults.{key} must be {kind.__name__}, got {shown(value)}")
        if kind is int and value is not None and value != int(value):
            raise UserError(f"{manifest}: search_defaults.{key} must be an integer, got {shown(value)}")
        values[key] = None if value is None else kind(value)
    if values["normalize"] not in NORMALIZE:
        raise UserError(f"{manifest}: search_defaults.normalize must be one of {', '.join(NORMALIZE)}")
    for key, what in UNSUPPORTED_WHEN_SET.items():
        if section.get(key):
            raise UserError(f"{manifest}: search_defaults.{key} is {shown(section[key])}: the in-browser page "
                            f"does not implement {what}; export with it off")
    return values


def read_export(path: Path) -> ExportDir:
    """The export at ``path``, every file the page ships checked; `UserError` otherwise."""
    raw, data = _manifest(path)
    manifest = path / MANIFEST
    files = data.get("files")
    if not isinstance(files, dict):
        raise UserError(f"{manifest}: 'files' must map each file of the export to its sha256")
    graphs, vocab = data.get("graphs"), data.get("vocab")
    if not isinstance(graphs, dict) or not all(k in graphs for k in ("encoder", "init", "step")):
        raise UserError(f"{manifest}: 'graphs' must name the encoder, init and step graphs")
    if not isinstance(vocab, dict) or not all(k in vocab for k in ("src", "tgt")):
        raise UserError(f"{manifest}: 'vocab' must name the src and tgt sentencepiece models")
    for key in ("memory", "state"):
        if not isinstance(data.get(key), list):
            raise UserError(f"{manifest}: '{key}' must be the list of {key} tensor names")
    payload: Dict[str, bytes] = {}
    for what, name in [*((f"graphs.{k}", graphs[k]) for k in ("encoder", "init", "step")),
                       *((f"vocab.{k}", vocab[k]) for k in ("src", "tgt"))]:
        if name not in payload:
            payload[name] = _checked_file(path, name, files, what)
    return ExportDir(path=path, manifest=data, manifest_bytes=raw, payload=payload,
                     src_vocab_bytes=payload[vocab["src"]],
                     search_defaults=_search_defaults(data.get("search_defaults", {}), manifest))
