"""The server's settings, defined in `rnmt_runtime.serving.settings` (the runtime's server
has the same); here their mistakes are rnmt's `UserError`, and ``--threads`` is bounded by
what torch may use (`rnmt.device.check_threads`)."""

from __future__ import annotations

from rnmt.device import check_threads
from rnmt.errors import UserError
from rnmt_runtime.errors import ExportError
from rnmt_runtime.serving.settings import ServeSettings as _Settings


class ServeSettings(_Settings):
    def check(self) -> ServeSettings:
        try:
            super().check()
        except ExportError as exc:
            raise UserError(str(exc)) from None
        check_threads(self.threads)
        return self
