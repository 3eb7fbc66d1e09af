"""Choosing the torch device from a user's setting (``auto``, ``cpu``, ``cuda``, ``cuda:1``).

Every command that runs a model needs this, and so does the trainer; it sits at the bottom
of the package so that commands, reproduction and serving need not import `rnmt.training`.
"""

from __future__ import annotations

import os
from typing import Optional

import torch

from rnmt.config import DEVICE_PATTERN
from rnmt.errors import UserError


def pick_device(name: str) -> torch.device:
    """The device a setting names; ``auto`` is the GPU when there is one, else the CPU.

    Raises:
        UserError: for a name torch does not know, or ``cuda`` on a machine without one.
    """
    # rnmt runs on the CPU and CUDA only: torch knows more names (meta, mps, xpu), which
    # load but fail later with a traceback
    if not isinstance(name, str) or not DEVICE_PATTERN.fullmatch(name):
        raise UserError(f"device must be auto, cpu, cuda or cuda:N, got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device '{name}' asked for, but no CUDA device is available")
    return device


def rank_device(device: torch.device, local_rank: Optional[int]) -> torch.device:
    """One GPU per process under data parallelism: an unnumbered ``cuda`` (or ``auto`` on a
    GPU machine) becomes ``cuda:LOCAL_RANK``; ``local_rank`` None means a single process."""
    if device.type == "cuda" and local_rank is not None and device.index is None:
        return torch.device("cuda", local_rank)
    return device


def max_threads() -> int:
    """The most CPU threads a run may ask for: 8 per CPU of this machine, at least 256.

    OpenMP ends the process (a segmentation fault, or exit 1 with "Thread creation failed")
    when it cannot create the threads asked for, which no handler can turn into an error:
    100,000 did so on a 2-core machine, where 4,096 still worked. More threads than cores
    only slow the work down, so the bound costs nothing."""
    return max(256, 8 * (os.cpu_count() or 1))


def check_threads(threads: Optional[int], name: str = "--threads") -> None:
    """Refuse a thread count below 1 or above `max_threads` (None: torch's default)."""
    if threads is None:
        return
    if threads < 1:
        raise UserError(f"{name} must be at least 1, got {threads}")
    if threads > max_threads():
        raise UserError(f"{name} must be at most {max_threads()} (8 per CPU of this machine, at least 256; "
                        f"more threads than cores only slow the work down), got {threads}")
