"""User-facing errors.

Anything the user can fix (a bad file, a wrong config key, a foreign checkpoint) raises
`UserError`; the command line prints it as one line ``error: ...`` and exits with code 2.
A write the system refuses (a full disk, a file size limit, a read-only or foreign
directory) is one too: `write_failure` phrases it. Everything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import errno
from typing import Tuple


class UserError(Exception):
    """An error caused by the user's input, reported as one line with exit code 2."""

    exit_code = 2


class DeprecatedConfigKey(FutureWarning):
    """A config key in a form that still works but will not forever (the command line
    shows it as one line ``warning: ...``)."""


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
