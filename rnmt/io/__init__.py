"""Files rnmt reads, below every layer that uses them (see docs/architecture.md)."""
