"""Whether the recurrent code may read tensor values on the host.

Two places in the units read a value on the host to pick a faster path: the step loop asks
once per sequence which time steps hold no padding, to skip their masking
(`rnmt.cells.runner`, through `FastCell.may_read_host` once a model is accelerated), and the
GRU's cuDNN sequence calls read the sentence lengths (`rnmt.fast.gru_cuda`). A CUDA graph's
recording cannot hold such a read, so within
``forbidden()`` the step loop masks every step (the same values: masking a step without
padding keeps every row's new state) and the GRU's sequences go through the step loop.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_allowed = True


def allowed() -> bool:
    return _allowed


@contextmanager
def forbidden() -> Iterator[None]:
    """Within the block the units read nothing on the host. Restored on exit; process-wide."""
    global _allowed
    before, _allowed = _allowed, False
    try:
        yield
    finally:
        _allowed = before
