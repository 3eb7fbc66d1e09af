"""Range checks of command-line options, made before any file or model is read, so that a
bad value is one line naming the option (exit code 2) instead of a traceback from deep
inside (``torch.set_num_threads(-1)`` raised a RuntimeError)."""

from __future__ import annotations

import argparse
from typing import Optional

import torch

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
    if threads < 1:
        raise UserError(f"--threads must be at least 1, got {threads}")
    torch.set_num_threads(threads)
