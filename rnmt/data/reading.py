"""Reading plain-text corpora: one segment per line, strict UTF-8.

Lines are split on ``\\n`` only (a trailing ``\\r`` is removed), never on the other
characters that `str.splitlines` treats as line breaks (U+2028, form feed, ...): a
segment containing one of those must not shift every following line out of alignment.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO, Iterator, List, Optional, Tuple, Union

from rnmt.errors import UserError

PathLike = Union[str, os.PathLike]

_BOM = b"\xef\xbb\xbf"
# The longest line read (bytes, terminator excluded): far beyond any segment, so it only
# stops a file without line breaks (a minified document, a binary passed by mistake) from
# being read whole into memory before anything can say what is wrong with it.
MAX_LINE_BYTES = 1 << 24


def content_length(raw: bytes) -> int:
    """The bytes of a raw line without its terminator (``\n``, ``\r\n`` or a final ``\r``)."""
    n = len(raw) - raw.endswith(b"\n")
    return n - (raw[n - 1:n] == b"\r")


def line_too_long(name: str, lineno: int) -> UserError:
    return UserError(f"{name}: line {lineno} is longer than {MAX_LINE_BYTES:,} bytes; "
                     f"is it text with one segment per line?")


def not_utf8(name: str, lineno: int, byte: int) -> UserError:
    return UserError(f"{name}: line {lineno} is not valid UTF-8 (byte {byte})")


def _decode(raw: bytes, name: str, lineno: int) -> str:
    """Decode one raw line (terminator included) or raise a `UserError` naming it."""
    if lineno == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(name, lineno, exc.start + 1) from None
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    return text


def _open(path: PathLike) -> BinaryIO:
    try:
        return open(path, "rb")
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise open_error(path, exc) from None


def open_error(path: PathLike, exc: OSError) -> Exception:
    """The one-line error for a file that could not be opened for reading (others go up as they are)."""
    if isinstance(exc, FileNotFoundError):
        return UserError(f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return UserError(f"{path}: is a directory, expected a text file")
    if isinstance(exc, PermissionError):
        return UserError(f"{path}: permission denied")
    return exc


def count_lines(path: PathLike) -> int:
    """Number of lines in a file; a last line without a terminator counts too."""
    n, last = 0, b"\n"
    with _open(path) as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def _iter_stream(stream: BinaryIO, name: str) -> Iterator[str]:
    lineno = 0
    while raw := stream.readline(MAX_LINE_BYTES + 2):  # room for "\r\n" after the longest line
        lineno += 1
        if content_length(raw) > MAX_LINE_BYTES:
            raise line_too_long(name, lineno)
        yield _decode(raw, name, lineno)


def iter_lines(path: PathLike) -> Iterator[str]:
    """Yield the decoded lines of a file, empty lines included (validated lazily)."""
    with _open(path) as f:
        yield from _iter_stream(f, str(path))


def read_lines(path: Optional[PathLike] = None) -> List[str]:
    """Read every line of `path` (standard input when None), keeping empty lines.

    This is the reader for translation input: output line i always belongs to input
    line i, so nothing is skipped. Invalid UTF-8 raises `UserError` with the line number.
    """
    if path is None or str(path) == "-":
        return list(_iter_stream(sys.stdin.buffer, "<stdin>"))
    return list(iter_lines(path))


def is_blank(text: str) -> bool:
    """True for an empty or whitespace-only segment (skipped in training)."""
    return not text.strip()


def iter_parallel(src_path: PathLike, tgt_path: PathLike) -> Iterator[Tuple[int, str, str]]:
    """Yield ``(line_index, src, tgt)`` for every line pair, blank pairs included.

    Line counts are compared before anything is yielded, so a caller never processes half
    of a misaligned corpus. `line_index` is 0-based.
    """
    n_src, n_tgt = count_lines(src_path), count_lines(tgt_path)
    if n_src != n_tgt:
        raise UserError(
            f"parallel files differ in length: {src_path} has {n_src} lines, {tgt_path} has {n_tgt}"
        )
    for i, (src, tgt) in enumerate(zip(iter_lines(src_path), iter_lines(tgt_path))):
        yield i, src, tgt


def read_parallel(src_path: PathLike, tgt_path: PathLike) -> Tuple[List[str], List[str], int]:
    """Read a parallel corpus, skipping pairs where either side is blank.

    Returns ``(src_lines, tgt_lines, n_empty)``; `n_empty` is the number of skipped pairs,
    for the caller to report.
    """
    src_lines: List[str] = []
    tgt_lines: List[str] = []
    n_empty = 0
    for _, src, tgt in iter_parallel(src_path, tgt_path):
        if is_blank(src) or is_blank(tgt):
            n_empty += 1
            continue
        src_lines.append(src)
        tgt_lines.append(tgt)
    return src_lines, tgt_lines, n_empty


