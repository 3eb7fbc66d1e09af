"""The request guards live in `rnmt_runtime.serving.guards` (the runtime's server uses them too)."""

from rnmt_runtime.serving.guards import *  # noqa: F401,F403
from rnmt_runtime.serving.guards import BearerToken, ConcurrencyLimit, TrustedHosts  # noqa: F401
