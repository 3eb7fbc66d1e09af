"""The HTTP protocol with arrival deadlines lives in `rnmt_runtime.serving.protocol` (shared with the runtime)."""

from rnmt_runtime.serving.protocol import *  # noqa: F401,F403
from rnmt_runtime.serving.protocol import Arrivals, DeadlineH11Protocol, deadline_protocol, server_config  # noqa: F401
