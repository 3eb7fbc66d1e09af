"""Encoded parallel corpora, cached on disk as memory-mappable arrays.

A corpus is encoded once into four ``.npy`` arrays per cache entry: the flat int32 ids
of every kept source (with ``</s>`` appended) and target segment (pieces only), plus
int64 offsets (``n + 1`` entries, ``offsets[i]:offsets[i+1]`` is segment i). The entry is
keyed by a hash of both files' contents, both vocabularies' bytes and `max_len`, so a
changed corpus or vocabulary is simply encoded again under a new key. Loading maps the
arrays read-only, so a large corpus never lives in Python lists.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Tuple, cast

import numpy as np

from rnmt.data.reading import PathLike, is_blank, iter_parallel
from rnmt.data.vocab import EOS_ID, Vocab
from rnmt.errors import CacheRebuiltWarning, UserError, write_failure
from rnmt_runtime.manifest import file_sha256

CACHE_FORMAT = 1
_ENCODE_CHUNK = 4096  # lines handed to sentencepiece per call
_ARRAYS = ("src", "src_offsets", "tgt", "tgt_offsets", "line_numbers")
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


@dataclass
class EncodedCorpus:
    """Encoded, filtered segment pairs.

    Attributes:
        src, src_offsets: flat source ids (each segment ends with ``</s>``) and offsets.
        tgt, tgt_offsets: flat target ids (no ``<s>``/``</s>``; `collate` adds them).
        line_numbers: 0-based line in the original files of each kept pair.
        n_empty: pairs skipped because one side was blank.
        n_too_long: pairs dropped by the `max_len` filter.
        cache_path: the cache entry directory, or None for an in-memory corpus.
        from_cache: True when the arrays were loaded from an existing cache entry.
    """

    src: np.ndarray
    src_offsets: np.ndarray
    tgt: np.ndarray
    tgt_offsets: np.ndarray
    line_numbers: np.ndarray
    n_empty: int = 0
    n_too_long: int = 0
    cache_path: Optional[Path] = None
    from_cache: bool = False

    def __post_init__(self) -> None:
        # Lengths as the batches see them: source incl. </s>; target = len(y) + 1, the
        # length of both tgt_in = <s> y and tgt_out = y </s>. int32, computed in slices:
        # 8 bytes per pair in memory, whatever the corpus size.
        self.src_lens = _lengths(self.src_offsets, 0)
        self.tgt_lens = _lengths(self.tgt_offsets, 1)
        self._reader: Optional[_SegmentReader] = None
        self.release_pages()

    def __len__(self) -> int:
        return len(self.src_offsets) - 1

    def src_ids(self, i: int) -> np.ndarray:
        if self._reader is not None:
            return self._reader.segment("src", i)
        return self.src[self.src_offsets[i]:self.src_offsets[i + 1]]

    def tgt_ids(self, i: int) -> np.ndarray:
        if self._reader is not None:
            return self._reader.segment("tgt", i)
        return self.tgt[self.tgt_offsets[i]:self.tgt_offsets[i + 1]]

    def release_pages(self) -> None:
        """Unmap the pages of the memory-mapped arrays that reading them has touched.

        Reading a mapped file maps its pages into this process, where they count as its
        resident memory until the kernel needs them back. The data stays in the page cache
        and is mapped again when next read; the arrays are read-only, so nothing is lost.
        A no-op for in-memory arrays.
        """
        for arr in (self.src, self.tgt, self.src_offsets, self.tgt_offsets, self.line_numbers):
            _release(arr)

    def pair(self, i: int) -> Tuple[np.ndarray, np.ndarray]:
        """``(source ids ending in </s>, target ids without <s> or </s>)`` of pair i."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"pair {i} out of range for {len(self)} pairs")
        i %= len(self)
        return self.src_ids(i), self.tgt_ids(i)

    @classmethod
    def from_id_lists(cls, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> EncodedCorpus:
        """An in-memory corpus from id lists (sources without </s>; it is appended here)."""
        if len(src) != len(tgt):
            raise ValueError(f"{len(src)} sources but {len(tgt)} targets")
        src_flat = [list(s) + [EOS_ID] for s in src]
        return cls(
            src=np.array([i for s in src_flat for i in s], dtype=np.int32),
            src_offsets=_offsets([len(s) for s in src_flat]),
            tgt=np.array([i for t in tgt for i in t], dtype=np.int32),
            tgt_offsets=_offsets([len(t) for t in tgt]),
            line_numbers=np.arange(len(src), dtype=np.int64),
        )


class _SegmentReader:
    """Reads single segments of a cache entry with ``pread`` instead of through the mapping.

    Batches pick pairs at random, and every read through a memory map maps pages (64 KiB
    around each access on Linux) that stay in the process's resident set: over an epoch the
    whole corpus would. Positioned reads go through the page cache (shared, reclaimable)
    without mapping anything, so a process's memory does not grow with the corpus.
    """

    def __init__(self, entry: Path, arrays: Dict[str, np.ndarray]) -> None:
        self.entry = entry
        names = ("src", "tgt", "src_offsets", "tgt_offsets")
        self._data_start = {name: cast(np.memmap, arrays[name]).offset for name in names}
        self._files: Dict[str, BinaryIO] = {}

    def _fd(self, name: str) -> int:
        fh = self._files.get(name)
        if fh is None:
            fh = self._files[name] = open(self.entry / f"{name}.npy", "rb")
        return fh.fileno()

    def segment(self, side: str, i: int) -> np.ndarray:
        name = f"{side}_offsets"
        lo, hi = np.frombuffer(os.pread(self._fd(name), 16, self._data_start[name] + 8 * int(i)), dtype="<i8")
        raw = os.pread(self._fd(side), 4 * int(hi - lo), self._data_start[side] + 4 * int(lo))
        return np.frombuffer(raw, dtype="<i4")

    def __getstate__(self) -> dict:  # open files are not pickled; they reopen on first use
        return {"entry": self.entry, "_data_start": self._data_start, "_files": {}}


def _lengths(offsets: np.ndarray, extra: int) -> np.ndarray:
    """``diff(offsets) + extra`` as int32, computed slice by slice (bounded temporaries)."""
    n = max(len(offsets) - 1, 0)
    out = np.empty(n, dtype=np.int32)
    step = 1 << 20
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        out[lo:hi] = np.diff(offsets[lo:hi + 1]) + extra
        _release(offsets)  # a mapped file: do not keep the pages just read
    return out


def _release(arr: np.ndarray) -> None:
    """Unmap the pages of a memory-mapped array (they stay in the page cache)."""
    mm = getattr(arr, "_mmap", None)
    if mm is not None and _MADV_DONTNEED is not None:
        try:
            mm.madvise(_MADV_DONTNEED)
        except (OSError, ValueError):  # closed or not supported: only a memory saving
            pass


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def file_digest(path: PathLike) -> str:
    """The SHA-256 of a file's bytes (`rnmt_runtime.manifest.file_sha256`), a missing file
    one `UserError`."""
    try:
        return file_sha256(Path(path))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None


def cache_key(src_path: PathLike, tgt_path: PathLike, src_vocab: Vocab, tgt_vocab: Vocab,
              max_len: Optional[int]) -> str:
    """Hash of everything the encoded arrays depend on (file contents, not names)."""
    parts = [f"rnmt-corpus-v{CACHE_FORMAT}", file_digest(src_path), file_digest(tgt_path),
             src_vocab.fingerprint, tgt_vocab.fingerprint, f"max_len={max_len or 0}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _write_npy(raw_path: Path, npy_path: Path, dtype: np.dtype, count: int) -> None:
    """Prefix a raw little-endian array file with an .npy header, in bounded memory."""
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (count,)}
    with open(npy_path, "wb") as out, open(raw_path, "rb") as raw:
        np.lib.format.write_array_header_1_0(out, header)
        shutil.copyfileobj(raw, out, 1 << 20)
    raw_path.unlink()


class _ArrayWriter:
    """Appends integer chunks to a raw file and counts them."""

    def __init__(self, path: Path, dtype: type) -> None:
        self.path, self.dtype, self.count = path, np.dtype(dtype).newbyteorder("<"), 0
        self._f: BinaryIO = open(path, "wb")

    def append(self, values: np.ndarray) -> None:
        self._f.write(np.asarray(values, dtype=self.dtype).tobytes())
        self.count += len(values)

    def finish(self, npy_path: Path) -> None:
        self._f.close()
        _write_npy(self.path, npy_path, self.dtype, self.count)


def _chunks(src_path: PathLike, tgt_path: PathLike) -> Iterator[Tuple[List[int], List[str], List[str], int]]:
    """Non-blank pairs in chunks ``(line_numbers, srcs, tgts, n_blank_in_chunk)``."""
    lines: List[int] = []
    srcs: List[str] = []
    tgts: List[str] = []
    blank = 0
    for i, s, t in iter_parallel(src_path, tgt_path):
        if is_blank(s) or is_blank(t):
            blank += 1
            continue
        lines.append(i)
        srcs.append(s)
        tgts.append(t)
        if len(lines) == _ENCODE_CHUNK:
            yield lines, srcs, tgts, blank
            lines, srcs, tgts, blank = [], [], [], 0
    yield lines, srcs, tgts, blank


def _encode_into(entry: Path, src_path: PathLike, tgt_path: PathLike, src_vocab: Vocab,
                 tgt_vocab: Vocab, max_len: Optional[int]) -> Dict[str, int]:
    """Encode the corpus into arrays under `entry`; return the counts for meta.json."""
    writers = {name: _ArrayWriter(entry / f"{name}.raw", np.int32 if name in ("src", "tgt") else np.int64)
               for name in _ARRAYS}
    writers["src_offsets"].append(np.zeros(1))
    writers["tgt_offsets"].append(np.zeros(1))
    src_end = tgt_end = 0
    n_empty = n_too_long = 0
    for line_nos, srcs, tgts, blank in _chunks(src_path, tgt_path):
        n_empty += blank
        if not line_nos:
            continue
        src_ids = [ids + [EOS_ID] for ids in src_vocab.encode_batch(srcs)]
        tgt_ids = tgt_vocab.encode_batch(tgts)
        keep = [k for k in range(len(line_nos))
                if not max_len or (len(src_ids[k]) <= max_len and len(tgt_ids[k]) + 1 <= max_len)]
        n_too_long += len(line_nos) - len(keep)
        if not keep:
            continue
        src_lens = np.array([len(src_ids[k]) for k in keep], dtype=np.int64)
        tgt_lens = np.array([len(tgt_ids[k]) for k in keep], dtype=np.int64)
        writers["src"].append(np.fromiter((i for k in keep for i in src_ids[k]), np.int32))
        writers["tgt"].append(np.fromiter((i for k in keep for i in tgt_ids[k]), np.int32))
        writers["src_offsets"].append(src_end + np.cumsum(src_lens))
        writers["tgt_offsets"].append(tgt_end + np.cumsum(tgt_lens))
        src_end += int(src_lens.sum())
        tgt_end += int(tgt_lens.sum())
        writers["line_numbers"].append(np.array([line_nos[k] for k in keep]))
    for name, writer in writers.items():
        writer.finish(entry / f"{name}.npy")
    return {"pairs": writers["line_numbers"].count, "n_empty": n_empty, "n_too_long": n_too_long}


class _UnreadableEntry(Exception):
    """A cache entry whose files do not load, or whose arrays disagree with each other."""


def _read_entry(entry: Path, vocab_sizes: Tuple[int, int]) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """The entry's meta and arrays, checked against each other (cheaply: lengths and the
    last offsets) and the token ids against ``vocab_sizes`` (source, target: one pass over
    each array), or `_UnreadableEntry` saying what is wrong."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
        arrays = {name: np.load(entry / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        n = len(arrays["line_numbers"])
        consistent = (isinstance(meta, dict) and meta.get("pairs", n) == n
                      and isinstance(meta.get("n_empty"), int) and isinstance(meta.get("n_too_long"), int)
                      and len(arrays["src_offsets"]) == len(arrays["tgt_offsets"]) == n + 1
                      and int(arrays["src_offsets"][-1]) == len(arrays["src"])
                      and int(arrays["tgt_offsets"][-1]) == len(arrays["tgt"]))
    except (OSError, ValueError, EOFError, IndexError) as exc:  # JSON and .npy headers raise ValueError
        raise _UnreadableEntry(f"{type(exc).__name__}: {exc}") from None
    if not consistent:
        raise _UnreadableEntry("its files disagree with each other")
    for name, size in zip(("src", "tgt"), vocab_sizes):
        ids = arrays[name]
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= size):
            raise _UnreadableEntry(f"{name}.npy holds token ids outside the vocabulary (ids {int(ids.min())} to "
                                   f"{int(ids.max())}, vocabulary size {size})")
    return meta, arrays


def _load_entry(entry: Path, from_cache: bool, vocab_sizes: Tuple[int, int]) -> EncodedCorpus:
    meta, arrays = _read_entry(entry, vocab_sizes)
    corpus = EncodedCorpus(**arrays, n_empty=meta["n_empty"], n_too_long=meta["n_too_long"],
                           cache_path=entry, from_cache=from_cache)
    if hasattr(os, "pread") and all(isinstance(arrays[n], np.memmap) for n in ("src", "tgt")):
        corpus._reader = _SegmentReader(entry, arrays)
    return corpus


def _discard(entry: Path) -> None:
    """Move a bad entry out of the way (a rename, so a process still reading it keeps its
    files), then delete it."""
    aside = entry.with_name(f".{entry.name}.unreadable.{os.getpid()}")
    try:
        os.rename(entry, aside)
    except OSError:
        return  # another process moved it first, or the cache is read-only: the build below says
    shutil.rmtree(aside, ignore_errors=True)


def encode_corpus(src_path: PathLike, tgt_path: PathLike, src_vocab: Vocab, tgt_vocab: Vocab,
                  cache_dir: PathLike, max_len: Optional[int] = 100) -> EncodedCorpus:
    """Encode a parallel corpus (or reuse its cache entry) and return the arrays.

    Blank pairs are skipped (`n_empty`). With `max_len` set, pairs whose source
    (with ``</s>``) or target (with ``</s>``) exceeds `max_len` subwords are dropped
    (`n_too_long`); None or 0 keeps every pair. The entry lives in
    ``cache_dir/<key>/``; a half-written entry is never visible (built in a temporary
    directory, then renamed).
    """
    if max_len is not None and max_len < 0:
        raise UserError(f"max_len must be positive or 0 (no limit), got {max_len}")
    key = cache_key(src_path, tgt_path, src_vocab, tgt_vocab, max_len)
    vocab_sizes = (src_vocab.size, tgt_vocab.size)
    root = Path(cache_dir)
    entry = root / key
    if (entry / "meta.json").is_file():
        try:
            return _load_entry(entry, from_cache=True, vocab_sizes=vocab_sizes)
        except _UnreadableEntry as exc:  # derived data: encode it again rather than fail
            warnings.warn(CacheRebuiltWarning(f"{entry}: corpus cache entry unreadable ({str(exc)[:200]}); "
                                              f"encoding the corpus again"), stacklevel=2)
            _discard(entry)
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
        meta: Dict[str, Any] = dict(_encode_into(tmp, src_path, tgt_path, src_vocab, tgt_vocab, max_len))
        meta.update(format=CACHE_FORMAT, key=key, max_len=max_len or 0,
                    src_file=Path(src_path).name, tgt_file=Path(tgt_path).name)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        try:
            os.rename(tmp, entry)
        except OSError:
            # Another process finished the same entry first; its arrays are identical.
            if not (entry / "meta.json").is_file():
                raise
    except OSError as exc:
        # A write refused (full disk, read-only cache_dir, ...): name the file when the
        # system did, else the cache directory (a failed write() names no file).
        what, advice = write_failure(exc)
        raise UserError(f"{exc.filename or root}: {what} while writing the corpus cache: {advice} "
                        f"(data.cache_dir chooses where it goes)") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return _load_entry(entry, from_cache=False, vocab_sizes=vocab_sizes)
