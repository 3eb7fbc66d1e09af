"""The dynamic batcher lives in `rnmt_runtime.serving.batcher` (the runtime's server uses it too)."""

from rnmt_runtime.serving.batcher import *  # noqa: F401,F403
from rnmt_runtime.serving.batcher import BatcherStats, DynamicBatcher, Expired, QueueFull, SearchOptions, ShuttingDown  # noqa: F401
