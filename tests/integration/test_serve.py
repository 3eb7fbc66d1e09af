"""The HTTP API through its test client: translation, model info, limits and bad input, the
OpenAPI schema, batching, settings refused by `rnmt serve`."""

from __future__ import annotations

import re
import socket

import pytest

from tests.serve_support import loaded_model, make_app, response_schema, serve_client, validate

SENTENCES = ["Y dijo Dios: Sea la luz.", "En el principio era el Verbo."]


@pytest.fixture(scope="module")
def client(tiny_run):
    with serve_client(tiny_run, max_texts=8, max_chars=200, max_body_bytes=4096, max_beam=4) as c:
        yield c


@pytest.fixture(scope="module")
def spec(client):
    return client.get("/openapi.json").json()


def test_health_and_model_info(client, tiny_run):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["pending"] == 0 and health["batching"]["enabled"] is True
    info = client.get("/model").json()
    loaded = loaded_model(tiny_run)
    from rnmt.models import count_parameters
    assert info["arch"] == "rnnsearch" and info["cell"] == "gru"
    assert (info["source_language"], info["target_language"]) == ("es", "en")
    assert info["parameters"]["total"] == count_parameters(loaded.model)["total"] > 0
    assert info["src_vocab_size"] == loaded.src_vocab.size and info["tgt_vocab_size"] == loaded.tgt_vocab.size
    assert info["limits"] == {"max_body_bytes": 4096, "max_texts": 8, "max_chars": 200, "max_beam": 4,
                              "max_constraints": 16, "max_constraint_tokens": 64, "max_request_tokens": 1000,
                              "max_output_tokens": 256, "max_queue": 64,
                              "timeout_s": 120.0}
    assert info["search"]["beam"] == loaded.config.search.beam


def test_translations_match_the_translator(client, tiny_run):
    from rnmt.search.translator import Translator
    loaded = loaded_model(tiny_run)
    expected = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search).translate(
        SENTENCES, beam=2)
    r = client.post("/translate", json={"texts": SENTENCES, "beam": 2})
    assert r.status_code == 200
    got = r.json()["translations"]
    assert [t["source"] for t in got] == SENTENCES
    assert [t["text"] for t in got] == [n[0].text for n in expected]
    assert [t["score"] for t in got] == pytest.approx([n[0].score for n in expected], abs=1e-4)
    assert "nbest" not in got[0] and "alignment" not in got[0]
    single = client.post("/translate", json={"text": SENTENCES[0], "beam": 2}).json()["translations"]
    assert len(single) == 1 and single[0]["text"] == got[0]["text"]


def test_empty_strings_translate_to_empty_strings(client):
    r = client.post("/translate", json={"texts": ["", SENTENCES[0], "   "]})
    texts = [t["text"] for t in r.json()["translations"]]
    assert r.status_code == 200 and texts[0] == "" and texts[2] == "" and len(texts) == 3
    only_empty = client.post("/translate", json={"text": "", "return_alignment": True, "nbest": 2}).json()
    assert only_empty["translations"] == [{"source": "", "text": "", "score": 0.0,
                                           "nbest": [{"text": "", "score": 0.0}],
                                           "alignment": {"src_tokens": [], "tgt_tokens": [], "attention": []}}]
    assert client.post("/translate", json={"texts": []}).json()["translations"] == []


def test_nbest_and_alignment(client):
    r = client.post("/translate", json={"texts": SENTENCES, "beam": 3, "nbest": 3, "alpha": 0.0,
                                        "return_alignment": True})
    assert r.status_code == 200
    for t in r.json()["translations"]:
        assert len(t["nbest"]) == 3 and t["nbest"][0]["text"] == t["text"]
        scores = [h["score"] for h in t["nbest"]]
        assert scores == sorted(scores, reverse=True)
        a = t["alignment"]
        assert a["src_tokens"][-1] == "</s>" and a["tgt_tokens"][-1] == "</s>"
        assert len(a["attention"]) == len(a["tgt_tokens"])
        assert all(len(row) == len(a["src_tokens"]) for row in a["attention"])
        assert all(abs(sum(row) - 1.0) < 1e-2 for row in a["attention"])  # a distribution per target token
    greedy = client.post("/translate", json={"text": SENTENCES[0], "beam": 1, "return_alignment": True})
    assert greedy.status_code == 200 and greedy.json()["translations"][0]["alignment"]["attention"]
    whole = client.post("/translate", json={"text": SENTENCES[0], "alpha": 1})  # strict, but 1 is a float
    assert whole.status_code == 200


def test_no_repeat_ngram_reaches_the_search(client, tiny_run):
    from rnmt.search.translator import Translator
    loaded = loaded_model(tiny_run)
    translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search)
    plain = [n[0].text for n in translator.translate(SENTENCES, beam=3)]
    blocked = [n[0].text for n in translator.translate(SENTENCES, beam=3, no_repeat_ngram=1)]
    assert blocked != plain  # the tiny model repeats subwords: blocking changes its outputs
    r = client.post("/translate", json={"texts": SENTENCES, "beam": 3, "no_repeat_ngram": 1})
    assert r.status_code == 200 and [t["text"] for t in r.json()["translations"]] == blocked


def test_min_output_tokens_reaches_the_search(client, monkeypatch):
    from rnmt.search import translator

    seen = []
    wrap = translator.with_min_length
    monkeypatch.setattr(translator, "with_min_length", lambda m, n, max_len: seen.append(n) or wrap(m, n, max_len))
    r = client.post("/translate", json={"texts": SENTENCES, "beam": 3, "min_output_tokens": 12})
    assert r.status_code == 200 and seen == [12]
    assert client.get("/model").json()["search"]["min_output_tokens"] == 0


def test_coverage_reaches_the_search(client, monkeypatch):
    from rnmt.search import translator

    seen = []
    search = translator.beam_search
    monkeypatch.setattr(translator, "beam_search", lambda *a, **k: seen.append(k["coverage"]) or search(*a, **k))
    r = client.post("/translate", json={"texts": SENTENCES, "beam": 3, "coverage": 0.3, "return_alignment": True})
    assert r.status_code == 200 and seen == [0.3]
    assert client.get("/model").json()["search"]["coverage"] == 0.0


@pytest.mark.parametrize("body, status, message", [
    (b"{bad json", 422, "malformed JSON"),
    (b"[1, 2]", 422, "must be a JSON object"),
    (b'{"text": "a", "texts": ["b"]}', 422, "exactly one of 'text' and 'texts'"),
    (b"{}", 422, "exactly one of 'text' and 'texts'"),
    (b'{"text": 3}', 422, "text:"),
    (b'{"texts": ["a","b","c","d","e","f","g","h","i"]}', 422, "texts: List should have at most 8 items"),
    (b'{"texts": ["ok", "' + b"x" * 201 + b'"]}', 422, "texts.1: String should have at most 200 characters"),
    (b'{"text": "a", "beam": 0}', 422, "beam:"),
    (b'{"text": "a", "beam": 5}', 422, "beam:"),
    (b'{"text": "a", "beam": true}', 422, "beam: Input should be a valid integer"),  # not a beam of 1
    (b'{"text": "a", "beam": "2"}', 422, "beam: Input should be a valid integer"),
    (b'{"text": "a", "beam": 2.0}', 422, "beam: Input should be a valid integer"),
    (b'{"text": "a", "return_alignment": "yes"}', 422, "return_alignment: Input should be a valid boolean"),
    (b'{"text": "a", "return_alignment": 1}', 422, "return_alignment: Input should be a valid boolean"),
    (b'{"text": "a", "nbest": 9}', 422, "nbest:"),
    (b'{"text": "a", "alpha": -1}', 422, "alpha:"),
    (b'{"text": "a", "coverage": -0.1}', 422, "coverage:"),
    (b'{"text": "a", "coverage": NaN}', 422, "coverage: Input should be a finite number"),
    (b'{"text": "a", "alpha": NaN}', 422, "alpha: Input should be a finite number"),  # Python's json reads NaN
    (b'{"text": "a", "no_repeat_ngram": -1}', 422, "no_repeat_ngram:"),
    (b'{"text": "a", "min_output_tokens": -1}', 422, "min_output_tokens:"),
    (b'{"text": "a", "min_output_tokens": 100000}', 422, "min_output_tokens:"),
    (b'{"text": "a", "colour": "red"}', 422, "colour: Extra inputs are not permitted"),
    (b'{"text": "' + b"x" * 5000 + b'"}', 413, "request body too large"),
])
def test_bad_requests_get_a_clear_json_error(client, body, status, message):
    r = client.post("/translate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert message in r.json()["error"]
    assert "\n" not in r.json()["error"]


def test_body_limit_holds_without_content_length(client):
    def chunks():
        for _ in range(10):
            yield b" " * 1000

    r = client.post("/translate", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "request body too large" in r.json()["error"]
    assert client.get("/health").status_code == 200


def test_unknown_paths_and_methods(client):
    assert client.get("/nope").status_code == 404 and "error" in client.get("/nope").json()
    assert client.get("/translate").status_code == 405


def test_openapi_schema_describes_the_api(client, spec):
    assert spec["openapi"].startswith("3.")
    assert set(spec["paths"]) == {"/translate", "/health", "/model"}
    post = spec["paths"]["/translate"]["post"]
    body_ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    request = spec["components"]["schemas"][body_ref.rsplit("/", 1)[-1]]
    assert request["additionalProperties"] is False
    props = request["properties"]
    assert set(props) == {"text", "texts", "beam", "alpha", "coverage", "nbest", "no_repeat_ngram",
                          "min_output_tokens", "return_alignment", "constraints"}
    texts = next(o for o in props["texts"]["anyOf"] if o.get("type") == "array")
    assert texts["maxItems"] == 8 and texts["items"]["maxLength"] == 200
    beam = next(o for o in props["beam"]["anyOf"] if o.get("type") == "integer")
    assert (beam["minimum"], beam["maximum"]) == (1, 4)
    assert {"200", "413", "422"} <= set(post["responses"])
    # every documented example request is accepted
    for example in request.get("examples", []):
        assert client.post("/translate", json=example).status_code == 200


def test_responses_conform_to_the_openapi_schema(client, spec):
    cases = [
        ("/translate", "post", {"texts": SENTENCES + [""], "nbest": 2, "return_alignment": True}, 200),
        ("/translate", "post", {"text": SENTENCES[0]}, 200),
        ("/translate", "post", {"text": 1}, 422),
        ("/translate", "post", {"text": "x" * 5000}, 413),
        ("/health", "get", None, 200),
        ("/model", "get", None, 200),
    ]
    for path, method, body, status in cases:
        r = client.request(method.upper(), path, json=body)
        assert r.status_code == status
        errors = validate(r.json(), response_schema(spec, path, method, status), spec)
        assert not errors, (path, status, errors)


def test_the_page_and_its_files_are_served_locally(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'id="source"' in page.text and 'id="heatmap"' in page.text
    for asset in ("/static/app.js", "/static/style.css"):
        r = client.get(asset)
        assert r.status_code == 200, asset
        assert not re.search(r"https?://", r.text), f"{asset} refers to an external resource"
    assert not re.search(r"(src|href)=\"https?://", page.text)


def test_requests_are_batched_under_concurrency(tiny_run):
    import asyncio

    import httpx

    app = make_app(tiny_run, max_wait_ms=200)

    async def main():
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                rs = await asyncio.gather(*[c.post("/translate", json={"text": s}) for s in SENTENCES * 3])
                return rs, (await c.get("/health")).json()

    responses, health = asyncio.run(main())
    assert all(r.status_code == 200 for r in responses)
    assert [r.json()["translations"][0]["source"] for r in responses] == SENTENCES * 3
    assert health["batching"]["requests"] == 6 and health["batching"]["batches"] < 6


def test_bad_settings_and_taken_port_fail_with_one_line(tiny_run):
    from rnmt.cli import main

    assert main(["serve", "--model", str(tiny_run), "--max-texts", "0"]) == 2
    assert main(["serve", "--model", str(tiny_run), "--read-timeout", "0"]) == 2
    assert main(["serve", "--model", str(tiny_run), "--max-incomplete-per-client", "0"]) == 2
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        assert main(["serve", "--model", str(tiny_run), "--port", str(taken.getsockname()[1]),
                     "--threads", "1"]) == 2
    finally:
        taken.close()


def test_no_page_loads_anything_from_outside(client):
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404


def _without_attention(tiny_run, coverage=0.0):
    """tiny_run's vocabularies and config around a Seq2seq model (no attention to report)."""
    from dataclasses import replace

    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    loaded = loaded_model(tiny_run)
    model = build_model(ModelConfig(arch="seq2seq", emb_size=8, hidden_size=8, src_vocab_size=loaded.src_vocab.size,
                                    tgt_vocab_size=loaded.tgt_vocab.size))
    config = replace(loaded.config, search=replace(loaded.config.search, coverage=coverage))
    return replace(loaded, model=model.eval(), config=config)


def test_attention_asked_of_a_model_without_it_is_a_422_not_a_500(tiny_run):
    # return_alignment on a Seq2seq or cyclic model failed inside the search: 500 "translation failed: 'attention'"
    from fastapi.testclient import TestClient

    from rnmt.serve.app import create_app
    from rnmt.serve.settings import ServeSettings

    with TestClient(create_app(_without_attention(tiny_run), ServeSettings(threads=1), "cpu")) as client:
        for extra in ({"return_alignment": True}, {"coverage": 0.2}):
            r = client.post("/translate", json={"texts": SENTENCES, "beam": 2, **extra})
            assert r.status_code == 422 and r.json()["error"].startswith("this model reports no attention weights")
        assert client.post("/translate", json={"texts": SENTENCES, "beam": 2}).status_code == 200


def test_a_config_coverage_on_a_model_without_attention_is_refused_at_start(tiny_run):
    from rnmt.errors import UserError
    from rnmt.serve.app import create_app
    from rnmt.serve.settings import ServeSettings

    with pytest.raises(UserError, match=r"its search.coverage \(0.3\) needs attention weights"):
        create_app(_without_attention(tiny_run, coverage=0.3), ServeSettings(threads=1), "cpu")
