"""Micro-benchmarks of rnmt's building blocks."""
