"""Terminology constraints through the Python API, `rnmt translate --constraints` (in-process)
and the server (its test client). The command line's mistakes as a user meets them:
tests/system/test_constraints_command.py."""

from __future__ import annotations

import pytest

import rnmt
from rnmt.cli import main
from tests.serve_support import serve_client

LINES = ["Y dijo Dios: Sea la luz.", "Y vio Dios que la luz era buena.", "", "Y llamó Dios á la luz Día"]
CONSTRAINTS = [["the light", "God"], [], ["darkness"], ["and the evening", "day", "said unto"]]


def test_api_outputs_contain_every_phrase(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    for options in ({}, {"beam": 3, "nbest": 2}, {"greedy": True}, {"prefix": ["And", "", "", "Then"]}):
        results = model.translate(LINES, constraints=CONSTRAINTS, **options)
        for line, phrases, result in zip(LINES, CONSTRAINTS, results):
            texts = [h.text for h in result] if isinstance(result, list) else [result]
            for text in texts:
                if not line:
                    assert text == ""  # a blank source line stays blank
                else:
                    assert all(p in text for p in phrases), (text, phrases)
    assert "God" in model.translate(LINES[0], constraints=["God"])  # one line: one list of phrases


def test_a_line_translated_in_pieces_keeps_its_constraints(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    line = " ".join(LINES[0] for _ in range(4))
    with pytest.warns(rnmt.errors.LongLineWarning):
        text = model.translate([line], constraints=[["God", "darkness"]], max_input_tokens=12)[0]
    assert "God" in text and "darkness" in text


def test_api_without_constraints_changes_nothing(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    assert model.translate(LINES, constraints=[[]] * len(LINES), beam=3) == model.translate(LINES, beam=3)
    mixed = model.translate(LINES, constraints=[[], [], [], ["God"]], beam=3)
    assert mixed[:3] == model.translate(LINES, beam=3)[:3]


@pytest.mark.parametrize("constraints,message", [
    ([["God"]], "1 constraint lists for 4 lines"),
    ([["God"], [""], [], []], "constraint 1 of line 2 is empty"),
    ([["God"], ["Ω"], [], []], "constraint 1 of line 2"),
    ("God", "one list of phrases"),
])
def test_api_mistakes_are_user_errors(tiny_run, constraints, message):
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(rnmt.UserError, match=message):
        model.translate(LINES, constraints=constraints)
    with pytest.raises(rnmt.UserError, match="do not combine with sample"):
        model.translate(LINES, constraints=[[]] * 4, sample=True)


@pytest.mark.filterwarnings("ignore::rnmt.errors.LongLineWarning")  # a cap of 5 splits line 2 too
def test_a_prefix_or_constraints_longer_than_the_output_cap_are_refused(tiny_run):
    # A prefix past --max-output-tokens came out whole past the cap; constraints past it
    # sent the constrained search on for as long as it liked.
    model = rnmt.load(tiny_run, device="cpu")
    long = " ".join(["God"] * 40)
    with pytest.raises(rnmt.UserError, match=r"line 2: its prefix take \d+ target subwords; an output holds at most 4"):
        model.translate(LINES[:2], prefix=["", long], max_output_tokens=5)
    with pytest.raises(rnmt.UserError, match=r"line 1: its constraints take \d+ target subwords"):
        model.translate(LINES[:2], constraints=[[long], []], max_output_tokens=5)
    text = model.translate(LINES[0], prefix="And", max_output_tokens=5)  # within the cap: as before
    assert text.startswith("And")


def test_constraints_file_on_the_command_line(tiny_run, tmp_path):
    src, cons, out = tmp_path / "in.es", tmp_path / "cons.en", tmp_path / "out.en"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    cons.write_text("\n".join("\t".join(c) for c in CONSTRAINTS) + "\n", encoding="utf-8")
    assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(out),
                 "--constraints", str(cons), "--chunk-lines", "2"]) == 0
    got = out.read_text(encoding="utf-8").splitlines()
    assert got[2] == "" and all(p in got[3] for p in CONSTRAINTS[3]) and all(p in got[0] for p in CONSTRAINTS[0])


@pytest.fixture(scope="module")
def client(tiny_run):
    with serve_client(tiny_run, max_constraints=2, max_constraint_tokens=6, max_beam=4) as c:
        yield c


def test_server_outputs_contain_every_phrase(client):
    r = client.post("/translate", json={"text": LINES[0], "constraints": ["God", "light"]})
    assert r.status_code == 200, r.text
    text = r.json()["translations"][0]["text"]
    assert "God" in text and "light" in text
    r = client.post("/translate", json={"texts": LINES[:3], "constraints": [["darkness"], [], ["day"]],
                                        "beam": 3, "nbest": 2})
    assert r.status_code == 200, r.text
    items = r.json()["translations"]
    assert all("darkness" in h["text"] for h in items[0]["nbest"]) and items[2]["text"] == ""
    plain = client.post("/translate", json={"texts": LINES[:2], "beam": 3, "nbest": 2}).json()["translations"]
    assert items[1] == plain[1]  # no constraints: the plain search's answer


@pytest.mark.parametrize("body,message", [
    ({"text": LINES[0], "constraints": ["a", "b", "c"]}, "3 phrases, the limit is 2"),
    ({"texts": LINES[:2], "constraints": [["a"]]}, "1 lists of phrases for 2 texts"),
    ({"texts": LINES[:2], "constraints": ["a", "b"]}, "one list of phrases per text"),
    ({"text": LINES[0], "constraints": ["and the evening and the morning"]}, "the limit is 6 per text"),
    ({"text": LINES[0], "constraints": [" "]}, "constraint 0 of text 0 is empty"),
    ({"text": LINES[0], "constraints": ["Ω"]}, "does not know"),
])
def test_server_refuses_constraints_over_the_limits(client, body, message):
    r = client.post("/translate", json=body)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"] and "\n" not in r.json()["error"]


def test_server_lists_the_constraint_limits(client):
    limits = client.get("/model").json()["limits"]
    assert limits["max_constraints"] == 2 and limits["max_constraint_tokens"] == 6
