"""A real uvicorn server on loopback: slow and vanishing clients never block the others."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.serve_support import live_server, make_app

httpx = pytest.importorskip("httpx")


def _raw_request(url: str, body: bytes, declared_length: int) -> socket.socket:
    """Opens a connection and sends a POST whose body may be incomplete; returns the socket."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    head = (f"POST /translate HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared_length}\r\n\r\n").encode()
    sock.sendall(head + body)
    return sock


def _until(condition, message: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.02)


def test_a_slow_client_does_not_block_others(tiny_run):
    app = make_app(tiny_run)
    with live_server(app) as url:
        slow = _raw_request(url, b'{"text": "Y dijo', declared_length=200)  # never sends the rest
        try:
            t0 = time.monotonic()
            r = httpx.post(f"{url}/translate", json={"text": "Y dijo Dios"}, timeout=20)
            assert r.status_code == 200
            assert time.monotonic() - t0 < 10
            assert httpx.get(f"{url}/health", timeout=5).json()["status"] == "ok"
        finally:
            slow.close()


def test_a_client_that_disconnects_is_dropped_and_others_are_served(tiny_run):
    app = make_app(tiny_run, max_wait_ms=0)
    service = app.state.service
    gate, entered = threading.Event(), threading.Event()
    real_translate = service.translate
    seen = []

    def held_translate(lines, options):  # the first call waits for the test to let it go
        seen.append(list(lines))
        entered.set()
        assert gate.wait(10)
        return real_translate(lines, options)

    app.state.batcher._translate = held_translate
    with live_server(app) as url:
        results = {}

        def post(name, text):
            results[name] = httpx.post(f"{url}/translate", json={"text": text}, timeout=30)

        first = threading.Thread(target=post, args=("first", "Y dijo Dios"))
        first.start()
        assert entered.wait(10)
        body = b'{"text": "gone away"}'
        quitter = _raw_request(url, body, declared_length=len(body))
        batcher = app.state.batcher
        waiting = lambda: list(batcher._queue._queue)  # noqa: E731 (jobs not yet taken by the worker)
        _until(lambda: len(waiting()) == 1, "the request was never queued")
        quitter.close()  # the client gives up before the model reaches its request
        _until(lambda: waiting()[0].future.cancelled(), "the server did not notice the disconnect")
        other = threading.Thread(target=post, args=("other", "En el principio"))
        other.start()
        gate.set()
        first.join(30)
        other.join(30)
        assert results["first"].status_code == 200 and results["other"].status_code == 200
        stats = httpx.get(f"{url}/health", timeout=5).json()["batching"]
    assert ["gone away"] not in seen
    assert stats["dropped"] == 1 and stats["requests"] == 2
