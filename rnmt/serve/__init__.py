"""HTTP serving: a FastAPI app with dynamic batching and a static demo page (``rnmt serve``)."""

from rnmt.serve.batcher import DynamicBatcher, SearchOptions
from rnmt.serve.settings import ServeSettings

__all__ = ["DynamicBatcher", "SearchOptions", "ServeSettings", "create_app"]


def create_app(*args, **kwargs):
    """`rnmt.serve.app.create_app`, imported lazily (FastAPI is an optional dependency)."""
    from rnmt.serve.app import create_app as _create_app

    return _create_app(*args, **kwargs)
