"""Hostile and careless inputs to translation and the server (issue 66's third round): each
test here failed before its fix.

#1 an API key with surrounding whitespace; #2 /health behind --max-connections; #3 n-best
and beam without bound, the row limit skipped for a one-line batch; #6 a prefix plus
constraints past --max-output-tokens; #8 seeds that differ giving the same samples;
#10 --temperature inf, bodies that are not UTF-8 or nest too deeply; #11 the API's raw
RuntimeError for beam=2**40 (the interrupted --output is tests/system/test_translate_interrupted.py).
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest

import rnmt
from rnmt.cli import main
from rnmt_runtime import limits  # the bounds rnmt.search.limits takes from the torch-free rules
from tests.support import assert_one_line

S = "Y dijo Dios: Sea la luz."


@pytest.fixture(scope="module")
def model(tiny_run):
    return rnmt.load(tiny_run, device="cpu")


def cli(tiny_run, tmp_path, *args) -> int:
    source = tmp_path / "in.es"
    source.write_text(S + "\n", encoding="utf-8")
    return main(["translate", "--model", str(tiny_run), "--input", str(source), "--threads", "1", *map(str, args)])


# -- #1 ----------------------------------------------------------------------------------
def test_a_key_with_surrounding_whitespace_is_the_key_without_it(tiny_run):
    from tests.serve_support import serve_client

    with serve_client(tiny_run, api_key="abc123\n") as client:  # a secret file's trailing newline
        assert client.get("/model", headers={"Authorization": "Bearer abc123"}).status_code == 200
        assert client.get("/model", headers={"Authorization": "Bearer abc12"}).status_code == 401


# -- #2 ----------------------------------------------------------------------------------
def test_health_is_answered_outside_the_in_progress_limit():
    from rnmt.serve.guards import ConcurrencyLimit

    seen = []

    async def app(scope, receive, send):
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    limit = ConcurrencyLimit(app, limit=4)
    limit.active = 4  # four slow translations in progress
    for path in ("/health", "/translate"):
        asyncio.run(limit({"type": "http", "path": path, "headers": []}, receive, send))
    statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
    assert seen == ["/health"] and statuses == [200, 503]


# -- #3 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["--sample", "--nbest", "1000000"], "--nbest must be in [1, 8192], got 1000000"),
    (["--nbest", "1000000"], "--nbest must be in [1, 8192]"),
    (["--beam", str(10 ** 12)], "--beam must be in [1, 8192]"),
    (["--sample", "--topk", str(2 ** 40)], "--topk must be in [1, 1048576]"),
])
def test_counts_over_their_bound_are_one_line_before_any_work(tiny_run, tmp_path, capsys, args, needle):
    start = time.perf_counter()
    assert cli(tiny_run, tmp_path, *args) == 2
    assert_one_line(capsys.readouterr().err, needle)
    assert time.perf_counter() - start < 5  # before the model loads


def test_the_row_limit_holds_for_a_one_line_batch(model, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SEARCH_ROWS", 8)
    for options in ({"beam": 9}, {"beam": 4, "nbest": 9}, {"sample": True, "nbest": 9}):
        with pytest.raises(rnmt.UserError, match="9 .* per sentence; a search holds at most 8"):
            model.translate([S], **options)
    assert len(model.translate([S], beam=8, nbest=8)) == 1  # at the limit: one sentence of 8 rows


# -- #6 ----------------------------------------------------------------------------------
def test_a_prefix_and_constraints_together_stay_under_the_cap(model):
    encode = model.loaded.tgt_vocab.encode
    prefix, phrase = "And God said", "the light of the day"
    together = len(encode(prefix)) + len(encode(phrase))
    cap = together  # each fits alone, both with the end of sentence do not
    assert len(encode(prefix)) < cap and len(encode(phrase)) < cap
    with pytest.raises(rnmt.UserError, match="line 1: its prefix and constraints take .*max-output-tokens"):
        model.translate([S], prefix=[prefix], constraints=[[phrase]], max_output_tokens=cap)
    out = model.translate([S], prefix=[prefix], constraints=[[phrase]], max_output_tokens=cap + 1,
                          token_scores=True)
    assert len(out[0].pieces) <= cap + 1


# -- #8 ----------------------------------------------------------------------------------
def test_different_seeds_give_different_samples_and_others_are_refused(model, tiny_run, tmp_path, capsys):
    lines = [S, "Y vio Dios que la luz era buena."]
    draws = {seed: [[h.text for h in hyps] for hyps in model.translate(lines, sample=True, nbest=4, seed=seed)]
             for seed in (0, 1, 2 ** 32 - 1)}
    assert draws[0] != draws[1] and draws[0] != draws[2 ** 32 - 1] and draws[1] != draws[2 ** 32 - 1]
    assert draws[0] == [[h.text for h in hyps] for hyps in model.translate(lines, sample=True, nbest=4, seed=0)]
    for seed in (-1, 2 ** 32 + 1, 2 ** 70):
        assert cli(tiny_run, tmp_path, "--sample", "--seed", seed) == 2
        assert_one_line(capsys.readouterr().err, "--seed must be in [0, 4294967295]")


# -- #10 ---------------------------------------------------------------------------------
def test_an_infinite_temperature_samples_as_documented(tiny_run, tmp_path, capsys):
    assert cli(tiny_run, tmp_path, "--sample", "--temperature", "inf", "--nbest", "2") == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert cli(tiny_run, tmp_path, "--sample", "--temperature", "nan") == 2
    assert_one_line(capsys.readouterr().err, "--temperature must be a number, got nan")


@pytest.mark.parametrize("body, needle", [
    (b'{"text": "\xff\xfe"}', "malformed JSON: the body is not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "malformed JSON"),
    (b'{"text": ' + b"[" * 100_000, "malformed JSON"),
])
def test_unreadable_bodies_are_422_as_documented(tiny_run, body, needle):
    from tests.serve_support import serve_client

    with serve_client(tiny_run) as client:
        r = client.post("/translate", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        assert r.json()["error"].startswith(needle) and "\n" not in r.json()["error"]
        assert client.post("/translate", json={"text": S}).status_code == 200  # and the server goes on


# -- #11 (the API's part) ----------------------------------------------------------------
def test_the_api_refuses_a_huge_beam_as_the_command_does(model, tiny_run, tmp_path, capsys):
    with pytest.raises(rnmt.UserError, match=re.escape("option 'beam' must be in [1, 8192], got 1099511627776")):
        model.translate([S], beam=2 ** 40)
    with pytest.raises(rnmt.UserError, match=re.escape("option 'beam' must be in [1, 8192]")):
        model.translate([S], rnmt.SearchOptions(beam=2 ** 40))
    assert cli(tiny_run, tmp_path, "--beam", 2 ** 40) == 2
    assert_one_line(capsys.readouterr().err, "--beam must be in [1, 8192], got 1099511627776")


def test_options_as_an_object_and_as_keywords_agree(model):
    lines = [S, "", "Y vio Dios que la luz era buena."]
    by_object = model.translate(lines, rnmt.SearchOptions(beam=3, nbest=2, no_repeat_ngram=2))
    assert by_object == model.translate(lines, beam=3, nbest=2, no_repeat_ngram=2)
    # keywords override the object's fields
    assert model.translate(lines, rnmt.SearchOptions(beam=3, nbest=2), nbest=1) == model.translate(lines, beam=3)
    with pytest.raises(rnmt.UserError, match="second argument must be a SearchOptions"):
        model.translate(lines, 5)  # type: ignore[call-overload]


def test_the_model_endpoint_describes_the_options_the_schema_takes(tiny_run):
    from tests.serve_support import serve_client

    with serve_client(tiny_run, max_beam=6) as client:
        options = {o["name"]: o for o in client.get("/model").json()["options"]}
        props = client.get("/openapi.json").json()["components"]["schemas"]["TranslateRequest"]["properties"]
    assert set(options) == set(props) - {"text", "texts", "constraints"}
    for name, bound in (("beam", 6), ("alpha", 10), ("no_repeat_ngram", 32)):
        typed = next(o for o in props[name]["anyOf"] if o.get("type") in ("integer", "number"))
        assert options[name]["maximum"] == typed["maximum"] == bound
