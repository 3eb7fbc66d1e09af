"""Turn SIGTERM and SIGINT into a request to stop at the next update boundary.

A scheduler's kill, ``docker stop``, torchrun tearing down its workers and Ctrl-C all
arrive as one of these two signals. Raising inside the update (the default for SIGINT)
could stop between the optimiser step and the step counter and save updated weights under
the old step; instead the handler only records the signal and the training loop, which
checks `StopSignals.received` after every update, saves an exact checkpoint and returns.
A second signal while stopping changes nothing: the save is already on its way, and a
process that must die at once can be killed (atomic writes keep the last checkpoint).
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Dict, Optional

HANDLED = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """Context manager: while active, SIGTERM/SIGINT set `received` instead of killing.

    Outside the main thread Python cannot install handlers; there it does nothing.
    """

    def __init__(self, log=None) -> None:
        self.received: Optional[int] = None
        self._log = log
        self._previous: Dict[int, object] = {}

    def _handle(self, signum: int, frame) -> None:
        if self.received is None:
            self.received = signum
            if self._log is not None:
                self._log(f"{signal.Signals(signum).name} received: saving at the end of this update")
        else:
            print(f"{signal.Signals(signum).name} received again: still saving", file=sys.stderr, flush=True)

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received else ""

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in HANDLED:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
