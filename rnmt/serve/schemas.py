"""The HTTP API's bodies live in `rnmt_runtime.serving.schemas`; rnmt's request takes the
search options of `rnmt.search.options`."""

from rnmt_runtime.serving.schemas import *  # noqa: F401,F403
from rnmt_runtime.serving.schemas import make_translate_request as _with_fields


def make_translate_request(settings):
    """The body of ``POST /translate`` with rnmt's search options and this server's limits."""
    from rnmt.search.options import server_fields

    return _with_fields(settings, server_fields(settings))
