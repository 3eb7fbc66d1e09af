"""User-facing errors.

Anything the user can fix (a bad file, a wrong config key, a foreign checkpoint) raises
`UserError`; the command line prints it as one line ``error: ...`` and exits with code 2.
A write the system refuses (a full disk, a file size limit, a read-only or foreign
directory) is one too: `write_failure` phrases it, and so is an allocation that fails (a
beam or batch too large for the machine's memory: `out_of_memory`). Everything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import re
from typing import Optional, Tuple

SHOWN_CHARS = 80  # the most of a user's value an error message quotes


def _short_repr(value: object, budget: int) -> str:
    """``repr(value)``, or a prefix of it at least ``budget`` characters long: a long string
    is cut before ``repr`` runs and a list or mapping stops at the item that fills the budget,
    so a 50 MB value costs no more than a short one."""
    if isinstance(value, str):
        return repr(value[:budget])
    if isinstance(value, (list, tuple, dict)):
        items = value.items() if isinstance(value, dict) else value
        opening, closing = ("{", "}") if isinstance(value, dict) else ("(", ")") if isinstance(value, tuple) else "[]"
        parts, used = [], 1
        for item in items:
            part = (f"{_short_repr(item[0], budget - used)}: {_short_repr(item[1], budget - used)}"
                    if isinstance(value, dict) else _short_repr(item, budget - used))
            parts.append(part)
            used += len(part) + 2
            if used > budget:
                break
        single = isinstance(value, tuple) and len(value) == 1
        return opening + ", ".join(parts) + ("," if single else "") + closing
    return repr(value)


def shown(value: object) -> str:
    """``repr(value)`` cut to `SHOWN_CHARS` characters (``...`` at the end): an error that
    quotes a key or value read from the user stays one short line whatever its size."""
    text = _short_repr(value, SHOWN_CHARS)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def shown_key(key: object) -> str:
    """A key read from the user as it is written into a dotted name (``model.options.KEY``):
    unquoted, cut to `SHOWN_CHARS` characters like `shown`."""
    text = key[: SHOWN_CHARS + 1] if isinstance(key, str) else _short_repr(key, SHOWN_CHARS)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


class UserError(Exception):
    """An error caused by the user's input, reported as one line with exit code 2."""

    exit_code = 2


class DeprecatedConfigKey(FutureWarning):
    """A config key in a form that still works but will not forever (the command line
    shows it as one line ``warning: ...``)."""


class CacheRebuiltWarning(UserWarning):
    """A corpus cache entry that could not be read (damaged or cut short) was discarded and
    encoded again (the command line shows it as one line ``warning: ...``)."""


class LongLineWarning(UserWarning):
    """A source line longer than the input limit, translated in pieces joined into one
    line (`rnmt.search.limits`); ``line`` counts from 1."""

    def __init__(self, line: int, subwords: int, limit: int, pieces: int) -> None:
        self.line, self.subwords, self.limit, self.pieces = line, subwords, limit, pieces
        super().__init__(f"line {line}: {subwords} subwords, more than max_input_tokens={limit}: translated in "
                         f"{pieces} pieces joined into one line")


# errno of a refused write -> (what happened, what to do about it)
_WRITE_ERRORS = {
    errno.ENOSPC: ("no space left on device", "free some space"),
    errno.EDQUOT: ("disk quota exceeded", "free some space"),
    errno.EFBIG: ("file too large for the file size limit or the file system",
                  "raise the limit (ulimit -f) or write elsewhere"),
    errno.EROFS: ("read-only file system", "write to a writable directory"),
    errno.EACCES: ("permission denied", "make the directory and file writable or write elsewhere"),
    errno.EPERM: ("operation not permitted", "make the directory and file writable or write elsewhere"),
    errno.ENOTDIR: ("a part of the path is a file, not a directory", "choose another path"),
    errno.EISDIR: ("is a directory", "name a file"),
}

WRITE_ERRNOS = frozenset(_WRITE_ERRORS)


def write_failure(exc: OSError) -> Tuple[str, str]:
    """(what happened, what to do) for an `OSError` raised while writing a file."""
    if exc.errno in _WRITE_ERRORS:
        return _WRITE_ERRORS[exc.errno]
    return ((exc.strerror or str(exc) or type(exc).__name__).lower(), "check the file system")


# What a command's memory grows with, for the out-of-memory line (`out_of_memory`).
_MEMORY_KNOBS = {
    "translate": "a smaller --beam, --nbest or --batch-tokens",
    "analyze": "a smaller --beam or --batch-tokens",
    "score": "a smaller --batch-tokens", "align": "a smaller --batch-tokens",
    "train": "a smaller data.batch_tokens, max_len or model", "reproduce": "smaller --dims or batches",
}


def out_of_memory(exc: BaseException, command: Optional[str] = None) -> Optional[str]:
    """``exc`` as one line when it is a failed allocation (Python's `MemoryError`, PyTorch's
    CPU allocator refusing a size, a GPU out of memory), with what to lower for ``command``;
    None for any other exception."""
    text = str(exc)
    if not (isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"
            or (isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text))):
        return None
    size = re.search(r"allocate (\d+) bytes", text)  # the CPU allocator's wording
    gpu = re.search(r"(?i)tried to allocate ([\d.]+ [KMGT]i?B)", text)  # CUDA's
    what = (f"could not allocate {int(size.group(1)) / 2**30:.1f} GiB" if size else
            f"could not allocate {gpu.group(1)}" if gpu else "an allocation failed")
    return f"out of memory: {what}; try {_MEMORY_KNOBS.get(command or '', 'less data at once')}"
