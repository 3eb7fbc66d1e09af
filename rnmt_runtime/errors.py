"""The runtime's one kind of user error: a message of one line, exit code 2 (as rnmt's `UserError`)."""

from __future__ import annotations


class ExportError(Exception):
    """Something the user can fix (a damaged export directory, an option out of its bound);
    the command prints ``error: MESSAGE`` and exits with `exit_code`."""

    exit_code = 2


def one_line(message: str) -> str:
    """``message`` with line breaks and other control characters escaped: a file name read
    from a manifest may hold anything, and an error stays one line."""
    return "".join(ch if ch.isprintable() or ch == "\t" else ch.encode("unicode_escape").decode("ascii")
                   for ch in message)
