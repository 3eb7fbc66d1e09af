"""Reading an export directory's ``manifest.json`` and checking the files it lists.

The directory's format is written down once, in docs/deploy.md ("Export"): a JSON manifest,
ONNX graphs and sentencepiece models. Reading it runs nothing from the directory: the
manifest is JSON, the vocabularies are protocol buffers sentencepiece parses, and the graphs
are given to onnxruntime without any custom-operator library (`rnmt_runtime.graphs`).
Every file the manifest lists is checked against its SHA-256 before any is used, so a
damaged or edited export is refused with one line naming the file instead of translating
wrongly.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from rnmt_runtime.errors import ExportError

FORMAT = "rnmt-export"
FORMAT_VERSION = 1  # the newest format this runtime reads
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20  # a manifest is a few kilobytes; refuse to parse a huge file
GRAPHS = ("encoder", "init", "step")
PRECISIONS = ("fp32", "int8")
NORMALIZE = ("gnmt", "length", "none")


@dataclass(frozen=True)
class SearchDefaults:
    """What ``rnmt translate`` does with no search flags, as the exporter recorded it."""

    beam: int = 5
    alpha: float = 0.6
    normalize: str = "gnmt"
    max_len_ratio: float = 1.5
    max_len_offset: int = 10
    max_output_tokens: int = 256
    max_input_tokens: Optional[int] = None  # None: the longest source the output cap does not cut
    batch_tokens: int = 4000
    nbest: int = 1
    min_output_tokens: int = 0
    no_repeat_ngram: int = 0
    coverage: float = 0.0


@dataclass(frozen=True)
class Manifest:
    """A checked manifest; paths are absolute, inside `directory`."""

    directory: Path
    architecture: str
    special_ids: Dict[str, int]
    src_vocab: Path
    tgt_vocab: Path
    graphs: Dict[str, Path]
    memory: List[str]
    state: List[str]
    beam_shares_memory: bool
    search: SearchDefaults
    precision: str
    fingerprint: str
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)
    # the step without its output layer and that layer's weight and bias (.npy), for a lexical
    # shortlist; None in an export written before them
    readout: Optional[Path] = None
    output_layer: Optional[Dict[str, Path]] = None

    @property
    def path(self) -> Path:
        return self.directory / MANIFEST


def is_export_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` looks like an export directory (a directory holding a manifest):
    what `rnmt translate --model` and `rnmt serve --model` decide on before importing torch."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, MANIFEST))


def load_manifest(directory: str | os.PathLike, verify: bool = True) -> Manifest:
    """The manifest of ``directory``, every check passed; `ExportError` naming the file otherwise."""
    root = Path(directory)
    if not root.is_dir():
        raise ExportError(f"{root}: not a directory (an export directory written by rnmt export)")
    path = root / MANIFEST
    data = _read_json(path)
    _check_format(data, path)
    files = _files(data, path)
    text = data.get("text", {})
    ids = text.get("ids", "sentencepiece") if isinstance(text, dict) else None
    if ids != "sentencepiece":
        raise ExportError(f"{path}: text.ids is {ids!r}; this runtime maps text to ids with sentencepiece only")
    reader = _Fields(data, path)
    special = reader.mapping("special_ids", int)
    for name in ("pad", "unk", "bos", "eos"):
        if name not in special:
            raise ExportError(f"{path}: special_ids has no '{name}'")
    vocab = reader.mapping("vocab", str)
    graphs = reader.mapping("graphs", str)
    for key in ("src", "tgt"):
        if key not in vocab:
            raise ExportError(f"{path}: vocab has no '{key}' file")
    for key in GRAPHS:
        if key not in graphs:
            raise ExportError(f"{path}: graphs has no '{key}' graph")
    named = {**{f"vocab.{k}": v for k, v in vocab.items()}, **{f"graphs.{k}": v for k, v in graphs.items()}}
    output_layer = reader.mapping("output_layer", str) if "output_layer" in data else {}
    for key, name in output_layer.items():
        if key not in ("weight", "bias"):
            raise ExportError(f"{path}: output_layer has {key!r}; it names a 'weight' and a 'bias' file")
        named[f"output_layer.{key}"] = name
    for what, name in named.items():
        if name not in files:
            raise ExportError(f"{path}: {what} names {name!r}, which 'files' does not list")
    shortlist_ready = "readout" in graphs and set(output_layer) == {"weight", "bias"}
    precision = reader.text("precision", "fp32")
    if precision not in PRECISIONS:
        raise ExportError(f"{path}: precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    manifest = Manifest(
        directory=root.resolve(), architecture=reader.text("architecture"), special_ids=special,
        src_vocab=root.resolve() / vocab["src"], tgt_vocab=root.resolve() / vocab["tgt"],
        graphs={k: root.resolve() / graphs[k] for k in GRAPHS},
        memory=reader.names("memory"), state=reader.names("state"),
        beam_shares_memory=reader.boolean("beam_shares_memory"),
        search=_search_defaults(data.get("search_defaults", {}), path), precision=precision,
        fingerprint=reader.text("fingerprint", ""), raw=data,
        readout=root.resolve() / graphs["readout"] if shortlist_ready else None,
        output_layer={k: root.resolve() / v for k, v in output_layer.items()} if shortlist_ready else None)
    if verify:
        verify_files(root, files)
    return manifest


def _read_json(path: Path) -> Dict[str, Any]:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ExportError(f"{path}: missing: {path.parent} is not an export directory (no {MANIFEST})") from None
    except OSError as exc:
        raise ExportError(f"{path}: cannot read it: {exc.strerror}") from None
    if size > MAX_MANIFEST_BYTES:
        raise ExportError(f"{path}: {size:,} bytes, more than a manifest holds ({MAX_MANIFEST_BYTES:,}); "
                          f"not an rnmt export")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise ExportError(f"{path}: not UTF-8 text: not an rnmt export manifest") from None
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except OSError as exc:
        raise ExportError(f"{path}: cannot read it: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise ExportError(f"{path}: a JSON {type(data).__name__}, not an object: not an rnmt export manifest")
    return data


def _check_format(data: Mapping[str, Any], path: Path) -> None:
    if data.get("format") != FORMAT:
        raise ExportError(f"{path}: format is {data.get('format')!r}, not {FORMAT!r}: not an rnmt export")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ExportError(f"{path}: format_version must be a positive integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise ExportError(f"{path}: format version {version} is newer than this runtime reads ({FORMAT_VERSION}); "
                          f"upgrade rnmt-runtime or export again with this version's rnmt")


def _files(data: Mapping[str, Any], path: Path) -> Dict[str, str]:
    files = data.get("files")
    if not isinstance(files, dict) or not files:
        raise ExportError(f"{path}: 'files' must map each file of the export to its sha256")
    for name, digest in files.items():
        if not safe_name(name):
            raise ExportError(f"{path}: files lists {name!r}, which is not a plain file name in the directory")
        if not isinstance(digest, str) or len(digest) != 64:
            raise ExportError(f"{path}: files.{name} must be a sha256 in hex, got {digest!r}")
    return dict(files)


def safe_name(name: Any) -> bool:
    """A file name inside the directory: no separators, no parent, nothing hidden behind it."""
    return (isinstance(name, str) and bool(name) and name not in (".", "..") and "/" not in name
            and "\\" not in name and "\x00" not in name and name != MANIFEST)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes in hex, read in blocks (exports and checkpoints run to
    hundreds of MB). Shared by the runtime's check, the exporter's fingerprint and distill."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_files(root: Path, files: Mapping[str, str]) -> None:
    """Each listed file exists, is a regular file, and has its recorded SHA-256."""
    for name, expected in files.items():
        path = root / name
        if not path.is_file():
            raise ExportError(f"{path}: missing from the export directory (its manifest lists it)")
        try:
            digest = file_sha256(path)
        except OSError as exc:
            raise ExportError(f"{path}: cannot read it: {exc.strerror}") from None
        if digest != expected.lower():
            raise ExportError(f"{path}: sha256 {digest[:12]}... differs from the manifest's "
                              f"{expected[:12]}...: the file is damaged or was changed after export")


class _Fields:
    """Typed reads of the manifest's top-level keys, each mistake one line naming the key."""

    def __init__(self, data: Mapping[str, Any], path: Path) -> None:
        self.data, self.path = data, path

    def _get(self, key: str, default: Any) -> Any:
        if key not in self.data:
            if default is not None:
                return default
            raise ExportError(f"{self.path}: no '{key}' key")
        return self.data[key]

    def text(self, key: str, default: Optional[str] = None) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise ExportError(f"{self.path}: '{key}' must be a string, got {value!r}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._get(key, None)
        if not isinstance(value, bool):
            raise ExportError(f"{self.path}: '{key}' must be true or false, got {value!r}")
        return value

    def names(self, key: str) -> List[str]:
        value = self._get(key, None)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ExportError(f"{self.path}: '{key}' must be a list of tensor names")
        return list(value)

    def mapping(self, key: str, kind: type) -> Dict[str, Any]:
        value = self._get(key, None)
        if not isinstance(value, dict) or not all(isinstance(v, kind) and not isinstance(v, bool)
                                                  for v in value.values()):
            raise ExportError(f"{self.path}: '{key}' must be an object of {kind.__name__} values")
        return dict(value)


_DEFAULT_SEARCH = SearchDefaults()
_SEARCH_KINDS = {"beam": int, "alpha": float, "normalize": str, "max_len_ratio": float, "max_len_offset": int,
                 "max_output_tokens": int, "max_input_tokens": int, "batch_tokens": int, "nbest": int,
                 "min_output_tokens": int, "no_repeat_ngram": int, "coverage": float}


def _search_defaults(section: Any, path: Path) -> SearchDefaults:
    """The ``search_defaults`` object; keys this runtime does not know are left alone (a
    newer exporter may record more), known ones are type-checked."""
    if not isinstance(section, dict):
        raise ExportError(f"{path}: 'search_defaults' must be an object")
    values: Dict[str, Any] = {}
    for key, kind in _SEARCH_KINDS.items():
        if key not in section or section[key] is None:
            continue
        value = section[key]
        ok = isinstance(value, (int, float)) if kind is float else isinstance(value, kind)
        if not ok or isinstance(value, bool):
            raise ExportError(f"{path}: search_defaults.{key} must be {kind.__name__}, got {value!r}")
        values[key] = float(value) if kind is float else value
    if values.get("normalize", _DEFAULT_SEARCH.normalize) not in NORMALIZE:
        raise ExportError(f"{path}: search_defaults.normalize must be one of {', '.join(NORMALIZE)}")
    return SearchDefaults(**values)
