"""rnmt: recurrent neural machine translation."""

__version__ = "0.1.0"
