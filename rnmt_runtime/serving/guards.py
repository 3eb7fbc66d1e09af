"""Admission checks in front of the application, as plain ASGI middleware.

Each answers a request it refuses itself, with a JSON body like every other error of the
server, before FastAPI parses anything:

- `TrustedHosts`: the ``Host`` header must name this server. A browser page on another
  site can make its own name resolve to 127.0.0.1 (DNS rebinding) and then talk to a
  loopback server as if it were same-origin; its requests still carry the foreign name.
- `BearerToken`: with ``--api-key``, every route but the page, its files and ``/health``
  needs ``Authorization: Bearer KEY`` (compared in constant time).
- `ConcurrencyLimit`: at most ``limit`` requests in flight; more get 503 with Retry-After.
  ``/health`` is not counted: a load balancer must see a busy server as alive.
  It stands behind the app's body reader, so it counts only requests that have fully
  arrived; the ones still arriving are bounded by the server's arrival deadline
  (rnmt_runtime/serving/protocol.py).
"""

from __future__ import annotations

import hmac
import json
from typing import Iterable, List, Optional, Sequence, Tuple

OPEN_PATHS = ("/", "/health", "/favicon.ico")
OPEN_PREFIXES = ("/static/",)
UNLIMITED_PATHS = ("/health",)  # outside the in-progress limit: it reads counters, never waits for the model


async def send_json(send, status: int, body: dict, headers: Sequence[Tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


def _header(scope, name: bytes) -> Optional[bytes]:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value
    return None


def host_name(value: str) -> str:
    """``example.org:8000`` -> ``example.org``; ``[::1]:8000`` -> ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class TrustedHosts:
    def __init__(self, app, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts: List[str] = [h.lower() for h in hosts]
        self.any = "*" in self.hosts

    def allowed(self, host: str) -> bool:
        return self.any or any(host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in self.hosts)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.any:
            await self.app(scope, receive, send)
            return
        raw = _header(scope, b"host")
        host = host_name(raw.decode("latin-1")) if raw else ""
        if not self.allowed(host):
            await send_json(send, 400, {"error": f"host '{host}' is not served here (allowed: "
                                                 f"{', '.join(self.hosts)}; see --allowed-host)"})
            return
        await self.app(scope, receive, send)


class BearerToken:
    def __init__(self, app, key: str) -> None:
        self.app = app
        self.key = key.strip().encode()  # as the token: a key file's trailing newline is no part of the key

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        auth = _header(scope, b"authorization") or b""
        scheme, _, token = auth.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self.key):
            await send_json(send, 401, {"error": "missing or wrong API key: send 'Authorization: Bearer KEY'"},
                            headers=[(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)


class ConcurrencyLimit:
    def __init__(self, app, limit: int, retry_after: int = 1) -> None:
        self.app = app
        self.limit = limit
        self.retry_after = retry_after
        self.active = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") in UNLIMITED_PATHS:  # a busy server still answers its health check
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            await send_json(send, 503, {"error": f"too many requests in progress (the limit is {self.limit}); "
                                                 f"retry later"},
                            headers=[(b"retry-after", str(self.retry_after).encode())])
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
