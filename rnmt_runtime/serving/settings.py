"""Server settings: batching, limits, threads (shared by rnmt serve and the runtime's server)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

from rnmt_runtime.errors import ExportError as UserError  # one line, exit 2 (rnmt's serve command shows it so)
from rnmt_runtime.limits import MAX_OUTPUT_TOKENS


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
    max_constraints: int = 16  # constraint phrases per text
    max_constraint_tokens: int = 64  # target subwords of one text's phrases together (and below max_output_tokens)
    request_timeout: float = 120.0  # seconds a request may wait for its translation
    threads: Optional[int] = None  # torch intra-op threads for the model worker
    max_request_tokens: int = 1000  # source subwords (EOS included) of one request; over: 413
    max_output_tokens: int = MAX_OUTPUT_TOKENS  # every output's length cap (as rnmt translate's)
    max_queue: int = 64  # requests waiting for the model; over: 503 with Retry-After
    max_connections: int = 256  # requests in progress once fully received (queued or translating)
    read_timeout: float = 10.0  # seconds a request may take to arrive, headers and body; then 408
    max_incomplete_per_client: int = 64  # arriving requests one address keeps when descriptors run short
    api_key: Optional[str] = None  # when set, /translate and /model need "Authorization: Bearer KEY"
    allowed_hosts: Optional[List[str]] = None  # Host header names accepted; None: any
    shutdown_grace: float = 5.0  # seconds the batch in progress may finish after SIGTERM

    def check(self) -> ServeSettings:
        for name in ("max_batch_tokens", "max_batch_sentences", "max_body_bytes", "max_texts", "max_chars",
                     "max_beam", "max_constraints", "max_constraint_tokens",
                     "max_request_tokens", "max_output_tokens", "max_queue", "max_connections",
                     "max_incomplete_per_client"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        # finite, or a lone request waits for a batch that never fills (inf), a timeout never
        # fires (NaN compares false with everything)
        for option, value, low, positive in (("--max-wait-ms", self.max_wait_ms, 0, False),
                                             ("--timeout", self.request_timeout, 0, True),
                                             ("--read-timeout", self.read_timeout, 0, True),
                                             ("--shutdown-grace", self.shutdown_grace, 0, False)):
            if not (math.isfinite(value) and (value > low if positive else value >= low)):
                bound = "above 0" if positive else "of at least 0"
                raise UserError(f"{option} must be a finite number {bound}, got {value}")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"--threads must be at least 1, got {self.threads}")
        if self.max_request_tokens > self.max_batch_tokens:
            # A request must fit in one batch: the batch budget is what bounds the model's work.
            raise UserError(f"--max-request-tokens ({self.max_request_tokens}) must not exceed "
                            f"--max-batch-tokens ({self.max_batch_tokens})")
        if self.api_key is not None:
            # compared as the client's token is: without surrounding whitespace (a key read from a
            # file ends in a newline, and a header value cannot carry one)
            self.api_key = self.api_key.strip()
            if not self.api_key:
                raise UserError("--api-key must not be empty")
        for name in self.allowed_hosts or []:  # an empty name matches no Host header: every request a 400
            if not name.strip() or any(ch.isspace() for ch in name):
                raise UserError(f"--allowed-host must be a host name (no spaces, not empty), got {name!r}")
        return self
