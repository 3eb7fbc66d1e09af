"""User-facing errors.

Anything the user can fix (a bad file, a wrong config key, a foreign checkpoint) raises
`UserError`; the command line prints it as one line ``error: ...`` and exits with code 2.
Everything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """An error caused by the user's input, reported as one line with exit code 2."""

    exit_code = 2
