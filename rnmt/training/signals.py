"""Turn SIGTERM and SIGINT into a request to stop at the next update boundary.

A scheduler's kill, ``docker stop``, torchrun tearing down its workers and Ctrl-C all
arrive as one of these two signals. Raising inside the update (the default for SIGINT)
could stop between the optimiser step and the step counter and save updated weights under
the old step; instead the handler only records the signal and the training loop, which
checks `StopSignals.received` after every update, saves an exact checkpoint and returns.
A second signal while stopping changes nothing: the save is already on its way, and a
process that must die at once can be killed (atomic writes keep the last checkpoint).

Before the first update (vocabulary training, corpus encoding, the model's build) there is
nothing to save: `interrupt_preparation` makes either signal raise `Interrupted` at once,
so the preparation unwinds within moments, its temporaries removed on the way out (the
corpus cache's build directory, a vocabulary's temporary file), and ``rnmt train`` says so
in one line.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Dict, Iterator, Optional

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


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT while a run prepares: nothing was saved, a rerun starts afresh. A
    `KeyboardInterrupt`, so that no ``except Exception`` on the way out swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def interrupt_preparation() -> Iterator[None]:
    """While active, SIGTERM and SIGINT raise `Interrupted` (main thread only: elsewhere
    Python cannot set handlers, and the process keeps the ones it has)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, stop) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
