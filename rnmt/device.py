"""Choosing the torch device from a user's setting (``auto``, ``cpu``, ``cuda``, ``cuda:1``).

Every command that runs a model needs this, and so does the trainer; it sits at the bottom
of the package so that commands, reproduction and serving need not import `rnmt.training`.
"""

from __future__ import annotations

from typing import Optional

import torch

from rnmt.errors import UserError


def pick_device(name: str) -> torch.device:
    """The device a setting names; ``auto`` is the GPU when there is one, else the CPU.

    Raises:
        UserError: for a name torch does not know, or ``cuda`` on a machine without one.
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"train.device: unknown device '{name}'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"train.device is '{name}' but no CUDA device is available")
    return device


def rank_device(device: torch.device, local_rank: Optional[int]) -> torch.device:
    """One GPU per process under data parallelism: an unnumbered ``cuda`` (or ``auto`` on a
    GPU machine) becomes ``cuda:LOCAL_RANK``; ``local_rank`` None means a single process."""
    if device.type == "cuda" and local_rank is not None and device.index is None:
        return torch.device("cuda", local_rank)
    return device
