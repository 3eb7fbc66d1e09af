"""Decoding: greedy and batched beam search, and the translator that drives them."""

from rnmt.search.beam import Hypothesis, beam_search, greedy_search, length_penalty

__all__ = ["Hypothesis", "beam_search", "greedy_search", "length_penalty"]
