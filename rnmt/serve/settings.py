"""Server settings: batching, limits, threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rnmt.errors import UserError


@dataclass
class ServeSettings:
    batching: bool = True
    max_wait_ms: float = 5.0  # how long the first request of a batch waits for company
    max_batch_tokens: int = 4000  # source subwords per batch
    max_batch_sentences: int = 64
    max_body_bytes: int = 1 << 20
    max_texts: int = 64
    max_chars: int = 2000  # per text
    max_beam: int = 16  # also the largest nbest
    request_timeout: float = 120.0  # seconds a request may wait for its translation
    threads: Optional[int] = None  # torch intra-op threads for the model worker

    def check(self) -> ServeSettings:
        for name in ("max_batch_tokens", "max_batch_sentences", "max_body_bytes", "max_texts", "max_chars",
                     "max_beam"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.max_wait_ms < 0:
            raise UserError(f"--max-wait-ms must not be negative, got {self.max_wait_ms}")
        if self.request_timeout <= 0:
            raise UserError(f"--timeout must be positive, got {self.request_timeout}")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"--threads must be at least 1, got {self.threads}")
        return self
