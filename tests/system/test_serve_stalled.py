"""`rnmt serve` against clients that stall: raw sockets to a server process on loopback.

Stalled clients send the headers and part of a body, or part of the headers, or nothing,
and then wait. They must not lock others out, and each is answered 408 and closed once the
arrival deadline (``--read-timeout``) has passed. Sources spread over 127.0.0.2 and up (all
loopback on Linux) stand for many client addresses.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import pytest

from rnmt.bench.server_process import serve_process, waiting

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

HEADERS = (b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: 100\r\n\r\n")
PARTIAL_BODY = HEADERS + b'{"text": "Y dijo'  # 83 bytes short of the declared length
PARTIAL_HEADERS = b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"


@contextlib.contextmanager
def rnmt_serve(run_dir: Path, *options: str, open_files: Optional[int] = None) -> Iterator[int]:
    """``rnmt serve`` on a free loopback port (rnmt.bench.server_process); yields its port."""
    with serve_process(run_dir, options, open_files=open_files) as server:
        yield server.port


def stall(port: int, data: bytes, source: str = "127.0.0.1") -> socket.socket:
    """A connection from ``source`` that sends ``data`` and then nothing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    if data:
        sock.sendall(data)
    return sock


def read_until_closed(sock: socket.socket, timeout: float) -> Tuple[bytes, Optional[float]]:
    """Everything the server sends until it closes, and when it closed (None: still open)."""
    t0 = time.monotonic()
    received = b""
    sock.settimeout(0.2)
    while time.monotonic() - t0 < timeout:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received, time.monotonic() - t0
        if not chunk:
            return received, time.monotonic() - t0
        received += chunk
    return received, None


def json_408(answer: bytes) -> str:
    """The ``error`` of a 408 answer (asserting that it is one)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"content-type: application/json" in head.lower()
    return json.loads(body)["error"]


def test_hundreds_of_stalled_clients_lock_nobody_out(tiny_run):
    # 350 stalled connections against an in-progress limit of 16: before the fix the app counted
    # each stalled body as a request in progress, and uvicorn (limit_concurrency = 4 x 16 + 256)
    # counted every connection; both answered every request 503.
    with rnmt_serve(tiny_run, "--max-connections", "16", "--timeout", "10") as port:
        stalled: List[socket.socket] = []
        try:
            for i in range(300):  # 30 per address, under the per-client bound
                stalled.append(stall(port, PARTIAL_BODY, source=f"127.0.0.{2 + i % 10}"))
            for i in range(50):
                stalled.append(stall(port, PARTIAL_HEADERS, source=f"127.0.1.{2 + i % 10}"))
            time.sleep(1.0)  # the server has read every one of them
            url = f"http://127.0.0.1:{port}"
            t0 = time.monotonic()
            health = httpx.get(f"{url}/health", timeout=10)
            assert health.status_code == 200, health.text
            assert time.monotonic() - t0 < 3
            t0 = time.monotonic()
            r = httpx.post(f"{url}/translate", json={"text": "Y dijo Dios"}, timeout=20)
            assert r.status_code == 200, r.text
            assert time.monotonic() - t0 < 10
            # They were not simply dropped: still waiting, within their deadline.
            assert sum(waiting(s) for s in stalled) == len(stalled)
        finally:
            for s in stalled:
                s.close()


def test_a_request_that_does_not_arrive_in_time_gets_408_and_is_closed(tiny_run):
    with rnmt_serve(tiny_run, "--read-timeout", "1") as port:
        body = stall(port, PARTIAL_BODY)
        head = stall(port, PARTIAL_HEADERS)
        silent = stall(port, b"")
        # A foreign Host is refused (400) before the body is read; the rest of that body never comes.
        early = stall(port, PARTIAL_BODY.replace(b"Host: 127.0.0.1", b"Host: elsewhere.example"))
        trickle = stall(port, HEADERS)
        t0 = time.monotonic()
        try:
            for _ in range(15):  # a byte every 0.2 s: busy, but the whole body would take 20 s
                if select.select([trickle], [], [], 0.2)[0]:
                    break  # the server has answered
                trickle.sendall(b" ")
            answer, closed = read_until_closed(trickle, 5)
            assert closed is not None and "did not arrive within 1 s" in json_408(answer)
            assert time.monotonic() - t0 < 4
            for sock in (body, head):
                answer, closed = read_until_closed(sock, 5)
                assert closed is not None and "did not arrive within 1 s" in json_408(answer)
            answer, closed = read_until_closed(silent, 5)
            assert closed is not None and answer == b""  # nothing asked, nothing answered
            answer, closed = read_until_closed(early, 5)
            assert closed is not None and answer.startswith(b"HTTP/1.1 400 ") and answer.count(b"HTTP/1.1") == 1
            assert time.monotonic() - t0 < 5  # before uvicorn's own keep-alive timeout (5 s) could have
            r = httpx.post(f"http://127.0.0.1:{port}/translate", json={"text": "Y dijo Dios"}, timeout=20)
            assert r.status_code == 200
        finally:
            for sock in (body, head, silent, early, trickle):
                sock.close()


def test_one_address_cannot_take_the_file_descriptors_everyone_needs(tiny_run):
    # A server that may open 256 files, and one address opening 300 stalled connections: before
    # the fix they took every descriptor and nobody else could connect. Now, once the requests
    # arriving hold half of them, that address is trimmed to its 8 newest.
    with rnmt_serve(tiny_run, "--max-incomplete-per-client", "8", "--read-timeout", "60", open_files=256) as port:
        elsewhere = [stall(port, PARTIAL_BODY, source="127.0.0.4") for _ in range(4)]
        crowd: List[socket.socket] = []
        try:
            for _ in range(300):
                crowd.append(stall(port, PARTIAL_BODY, source="127.0.0.3"))
            time.sleep(1.5)  # accepting resumes a second after it ran out of files
            # Closed ones whose bytes the server had not read yet get a reset instead of the answer.
            answer, closed = read_until_closed(crowd[0], 5)
            assert closed is not None
            assert answer == b"" or "more than 8 requests from your address" in json_408(answer)
            assert all(waiting(s) for s in crowd[-8:] + elsewhere)
            assert sum(waiting(s) for s in crowd) < 128
            url = f"http://127.0.0.1:{port}"
            assert httpx.get(f"{url}/health", timeout=10).status_code == 200
            r = httpx.post(f"{url}/translate", json={"text": "Y dijo Dios"}, timeout=20)
            assert r.status_code == 200
        finally:
            for sock in crowd + elsewhere:
                sock.close()
