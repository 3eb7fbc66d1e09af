"""Decoding: greedy and batched beam search, and the translator that drives them.

The searches are imported on first use, so that `rnmt.search.options` (which ``import
rnmt`` reads for the API's types) loads no PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["SearchHypothesis", "beam_search", "greedy_search", "length_penalty"]

if TYPE_CHECKING:
    from rnmt.search.beam import SearchHypothesis, beam_search, greedy_search, length_penalty


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rnmt.search import beam

        return getattr(beam, name)
    raise AttributeError(f"module 'rnmt.search' has no attribute {name!r}")
