"""Decoding: greedy and batched beam search, and the translator that drives them."""

from rnmt.search.beam import SearchHypothesis, beam_search, greedy_search, length_penalty

__all__ = ["SearchHypothesis", "beam_search", "greedy_search", "length_penalty"]
