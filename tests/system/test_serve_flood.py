"""`rnmt serve` under a flood beyond its queue, and SIGTERM with requests in flight."""

from __future__ import annotations

from tests.support import load_benchmark

# -- live: a flood beyond the queue, SIGTERM with requests in flight ----------------------

def load_flood():
    return load_benchmark("serve_flood")


def test_a_flood_beyond_the_queue_is_answered_and_memory_stays_bounded(tiny_run):
    result = load_flood().run_flood(str(tiny_run), 200, client_timeout=60)
    assert result["answered"] == 200 and result["hung"] == 0 and not result["connection_errors"]
    assert result["unexpected_statuses"] == [] and result["not_json"] == 0
    assert result["statuses"].get("503", 0) > 0 and result["statuses"].get("200", 0) > 0
    if result["peak_rss_mb_before"] is not None:
        assert result["peak_rss_mb"] - result["peak_rss_mb_before"] < 200


def test_sigterm_with_requests_in_flight_answers_every_request(tiny_run):
    result = load_flood().run_flood(str(tiny_run), 60, sigterm=True, client_timeout=60)
    assert result["answered"] == 60 and result["hung"] == 0 and not result["connection_errors"]
    assert result["unexpected_statuses"] == [] and result["not_json"] == 0
    assert result["exited"] is True



def test_requests_still_arriving_after_sigterm_are_answered(tiny_run):
    """Requests whose bytes arrive over the second after SIGTERM on connections the server has
    accepted: while they keep coming the server drains them with 503, where uvicorn's own
    shutdown would close them unanswered (the mid-flood SIGTERM test above lost 11 of 60 so)."""
    import json
    import signal
    import socket
    import time

    from rnmt.bench.server_process import serve_process

    body = json.dumps({"text": "hola"}).encode()
    request = (b"POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with serve_process(tiny_run) as server:
        socks = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(16)]
        time.sleep(0.3)  # accepted, nothing sent yet
        server.proc.send_signal(signal.SIGTERM)
        for s in socks:  # one every 50 ms: about 0.8 s of arrivals after the signal
            time.sleep(0.05)
            s.sendall(request)
        answers = []
        for s in socks:
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            answers.append(data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "none")
            s.close()
        assert server.proc.wait(timeout=30) is not None
    assert answers == ["503"] * 16
