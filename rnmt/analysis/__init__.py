"""Interpretability: word alignments from attention or gates, ATR gate statistics and the
dependency weights of ATR eq. 10, and the plots and HTML report of ``rnmt analyze``.
See docs/analysis.md."""

from rnmt.analysis.atr import (
    DependencyWeights,
    chain_weights,
    dependency_weights,
    pearson,
    position_means,
    strongest_previous,
)
from rnmt.analysis.words import aggregate_to_words, argmax_links, format_pharaoh, threshold_links, word_index_of_pieces

__all__ = [
    "DependencyWeights", "chain_weights", "dependency_weights", "pearson", "position_means",
    "strongest_previous",
    "aggregate_to_words", "argmax_links", "format_pharaoh", "threshold_links", "word_index_of_pieces",
]
