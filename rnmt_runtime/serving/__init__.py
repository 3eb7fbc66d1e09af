"""The HTTP server of rnmt and of the runtime (FastAPI)."""
