"""Range checks of command-line options, made before any file or model is read, so that a
bad value is one line naming the option (exit code 2) instead of a traceback from deep
inside (``torch.set_num_threads(-1)`` raised a RuntimeError)."""

from __future__ import annotations

import argparse
from typing import Optional

import torch

from rnmt.device import check_threads
from rnmt.errors import UserError


def at_least(args: argparse.Namespace, low: int, *names: str) -> None:
    """Refuse the first of the options ``names`` (attribute names) given below ``low``;
    an option left out (None) passes."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < low:
            raise UserError(f"--{name.replace('_', '-')} must be at least {low}, got {value}")


def use_threads(threads: Optional[int]) -> None:
    """``--threads``: torch's CPU threads for this process; None keeps torch's default."""
    if threads is None:
        return
    check_threads(threads)
    torch.set_num_threads(threads)


class Once(argparse.Action):
    """An option given at most once. argparse keeps the last of repeated values silently (a
    second ``--model`` replaced the first); this keeps which option was repeated, and
    `given_once` refuses it in one line (argparse's own error would print the usage too)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            namespace.given_twice = option_string
        setattr(namespace, self.dest, values)


def given_once(args: argparse.Namespace) -> None:
    """Refuse an option of action `Once` that was given more than once."""
    repeated = getattr(args, "given_twice", None)
    if repeated:
        raise UserError(f"{repeated} given twice: this command reads one")
