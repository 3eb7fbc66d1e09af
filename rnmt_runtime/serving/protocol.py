"""uvicorn's HTTP/1.1 protocol with a deadline on every request's arrival.

uvicorn bounds how long an idle keep-alive connection may stay open, but not how long a
client may take to send a request: a connection that sends part of its headers, or its
headers and part of a body, then nothing (or a byte now and then), stays open for ever.
Enough of them hold every file descriptor the process may open, or, counted by uvicorn's
``limit_concurrency``, make it answer every request 503.

`deadline_protocol` gives each request ``read_timeout`` seconds from its first byte (a new
connection from the moment it opens) until its last byte has arrived. When the time runs
out the client gets a JSON 408 (nothing when it has not sent a byte yet) and the connection
is closed. And when the requests still arriving hold half of the process's file descriptors,
one client address may keep at most ``per_client`` of them (`Arrivals`).
"""

from __future__ import annotations

import asyncio
import json
import resource
from collections import OrderedDict
from typing import Any, Dict, Optional

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from rnmt_runtime.serving.settings import ServeSettings


def timeout_response(message: str) -> bytes:
    """A complete ``408`` answer with a JSON body, written straight to the socket."""
    body = json.dumps({"error": message}).encode()
    head = (f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body


class Arrivals:
    """The connections whose current request has not fully arrived, per client address, oldest first.

    Each holds a file descriptor until its deadline. Once they number ``pressure`` (half the
    process's limit on open files), a new one trims its own address to ``per_client``, closing
    the oldest: one address cannot take the descriptors everyone needs. Below that, a burst of
    any size from one address (a proxy, a load test), whose bytes may be read a second or two
    after its connections were accepted, is left alone.
    """

    def __init__(self, per_client: int, pressure: int) -> None:
        self.per_client = per_client
        self.pressure = pressure
        self.total = 0
        self.by_client: Dict[Any, OrderedDict] = {}

    def add(self, conn: DeadlineH11Protocol) -> None:
        queue = self.by_client.setdefault(conn.client_key, OrderedDict())
        queue[conn] = None
        self.total += 1
        if self.total >= self.pressure:
            while len(queue) > self.per_client:  # conn is the newest: never the one closed
                next(iter(queue)).expire(
                    f"closed: the server is short of connections and more than {self.per_client} requests "
                    f"from your address were arriving at once; this one was the oldest")

    def remove(self, conn: DeadlineH11Protocol) -> None:
        queue = self.by_client.get(conn.client_key)
        if queue is None or conn not in queue:
            return
        del queue[conn]
        self.total -= 1
        if not queue:
            del self.by_client[conn.client_key]


class DeadlineH11Protocol(H11Protocol):
    """`H11Protocol` plus the arrival deadline; `deadline_protocol` sets the class attributes."""

    read_timeout: float = 10.0
    arrivals: Arrivals

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.client_key = self.client[0] if self.client else None
        self.deadline: Optional[asyncio.TimerHandle] = None
        self.begin_arrival()  # a new connection owes its first request

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            self.end_arrival()
        elif self.request_in_flight() or self.conn.their_state is h11.IDLE:
            # Part of a request is here, or the bytes that completed a request whose answer
            # had already gone out left the connection idle without uvicorn's keep-alive timer.
            self.begin_arrival()
        else:  # the whole request is here: the app has it
            self.end_arrival()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.end_arrival()
        super().connection_lost(exc)

    def request_in_flight(self) -> bool:
        """Whether part of a request has arrived and the rest has not."""
        state = self.conn.their_state
        return state is h11.SEND_BODY or (state is h11.IDLE and bool(self.conn.trailing_data[0]))

    def begin_arrival(self) -> None:
        if self.deadline is None:  # the deadline runs from the request's first byte, not its last
            self.deadline = self.loop.call_later(
                self.read_timeout, self.expire,
                f"the request did not arrive within {self.read_timeout:g} s: send its headers and body "
                f"without pausing")
            self.arrivals.add(self)

    def end_arrival(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
            self.arrivals.remove(self)

    def expire(self, message: str) -> None:
        """Answers 408 unless nothing was sent or the answer is already on its way, and closes."""
        self.end_arrival()
        if self.transport.is_closing():
            return
        cycle = self.cycle
        answered = cycle is not None and cycle.response_started and self.conn.their_state is h11.SEND_BODY
        if self.request_in_flight() and not answered:
            self.transport.write(timeout_response(message))
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app's receive() returns http.disconnect, its answer is dropped
            cycle.message_event.set()
        self.transport.close()


def open_files_limit() -> int:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def deadline_protocol(read_timeout: float, per_client: int) -> type:
    """A protocol class for ``uvicorn.Config(http=...)`` with its own registry of arrivals."""
    arrivals = Arrivals(per_client, pressure=max(1, open_files_limit() // 2))
    return type("DeadlineH11Protocol", (DeadlineH11Protocol,), {"read_timeout": read_timeout, "arrivals": arrivals})


def server_config(app, settings: ServeSettings, **options) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: the deadline protocol, and no ``limit_concurrency``.

    uvicorn's limit counts open connections, stalled ones included, and once reached it answers
    every request 503, ``/health`` too; the app's own limit counts only requests that have
    fully arrived, and the deadline bounds the others.
    """
    return uvicorn.Config(app, http=deadline_protocol(settings.read_timeout, settings.max_incomplete_per_client),
                          **options)
