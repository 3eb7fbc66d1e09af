"""Serving under bad input and faults, through the app: limits, deadlines, a poisoned request,
the worker down, access checks."""

from __future__ import annotations

import threading
import time

import pytest

from rnmt.search.beam import SearchStopped
from rnmt.search.translator import Translator
from tests.serve_support import loaded_model, make_app, serve_client

LONG = " ".join(["En el principio creó Dios los cielos y la tierra."] * 6)


def is_json_error(r, status):
    return (r.status_code == status and r.headers["content-type"].startswith("application/json")
            and isinstance(r.json().get("error"), str))


# -- per-request limits ------------------------------------------------------------------

def test_a_request_over_the_subword_limit_is_413_with_the_limit(tiny_run):
    with serve_client(tiny_run, max_request_tokens=20, max_batch_tokens=100) as client:
        r = client.post("/translate", json={"texts": [LONG]})
        assert is_json_error(r, 413) and "the limit is 20" in r.json()["error"]
        assert r.json()["detail"]["limit_subwords"] == 20 and r.json()["detail"]["subwords"] > 20
        assert client.post("/translate", json={"text": "Y dijo Dios"}).status_code == 200


def test_output_length_has_an_absolute_cap(tiny_run):
    with serve_client(tiny_run, max_output_tokens=3) as client:
        r = client.post("/translate", json={"text": LONG, "return_alignment": True, "beam": 2})
        assert r.status_code == 200
        assert len(r.json()["translations"][0]["alignment"]["tgt_tokens"]) <= 3  # EOS included


def test_should_stop_ends_the_search_inside_its_loop(tiny_run):
    loaded = loaded_model(tiny_run)
    translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search)
    for beam in (1, 3):
        calls = []

        def stop_after_two(calls=calls):
            calls.append(1)
            return len(calls) > 2

        with pytest.raises(SearchStopped):
            translator.translate([LONG], beam=beam, should_stop=stop_after_two)
        assert len(calls) == 3  # two steps ran, the third check stopped it


def test_a_poisoned_request_is_a_json_500_through_the_app(tiny_run):
    app = make_app(tiny_run, max_wait_ms=30)
    real = app.state.service.translate

    def flaky(lines, options, should_stop=None):
        if any("veneno" in line for line in lines):
            raise RuntimeError("the model failed")
        return real(lines, options, should_stop)

    app.state.batcher._translate = flaky
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        results = {}

        def post(text):
            results[text] = client.post("/translate", json={"text": text})

        threads = [threading.Thread(target=post, args=(t,)) for t in ("Y dijo Dios", "veneno", "la luz")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results["Y dijo Dios"].status_code == 200 and results["la luz"].status_code == 200
        assert is_json_error(results["veneno"], 500) and "the model failed" in results["veneno"].json()["error"]


def test_health_is_503_and_requests_get_json_503_when_the_worker_is_down(tiny_run):
    app = make_app(tiny_run)
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        assert client.get("/health").status_code == 200
        for task in app.state.batcher._tasks:
            task.cancel()
        deadline = time.monotonic() + 5
        while app.state.batcher.running and time.monotonic() < deadline:
            time.sleep(0.01)
        r = client.get("/health")
        assert r.status_code == 503 and r.json()["status"] == "stopped"
        assert is_json_error(client.post("/translate", json={"text": "hola"}), 503)


# -- access ------------------------------------------------------------------------------

def test_api_key_is_required_when_set(tiny_run):
    with serve_client(tiny_run, api_key="s3cret") as client:
        r = client.post("/translate", json={"text": "hola"})
        assert is_json_error(r, 401) and r.headers["www-authenticate"] == "Bearer"
        assert client.post("/translate", json={"text": "hola"},
                           headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.post("/translate", json={"text": "hola"},
                           headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert is_json_error(client.get("/model"), 401)
        assert client.get("/health").status_code == 200 and client.get("/").status_code == 200


def test_only_trusted_host_names_are_served(tiny_run):
    with serve_client(tiny_run, allowed_hosts=["localhost", "127.0.0.1", "::1"]) as client:
        for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
            assert client.get("/health", headers={"Host": host}).status_code == 200, host
        for host in ("attacker.example", "attacker.example:8000", "localhost.attacker.example"):
            r = client.post("/translate", json={"text": "hola"}, headers={"Host": host})
            assert is_json_error(r, 400) and "not served here" in r.json()["error"], host


def test_every_error_status_has_a_json_body(tiny_run):
    with serve_client(tiny_run, max_request_tokens=10, max_batch_tokens=100, max_texts=2) as client:
        assert is_json_error(client.get("/nowhere"), 404)
        assert is_json_error(client.get("/translate"), 405)
        assert is_json_error(client.post("/translate", json={"texts": ["a", "b", "c"]}), 422)
        assert is_json_error(client.post("/translate", json={"text": LONG}), 413)
        assert is_json_error(client.post("/translate", content=b"{", headers={"content-type": "application/json"}),
                             422)
