"""Generated search options for `rnmt translate` and the Python API, and generated request
bodies for the server: every case ends in success or a one-line error (exit code 2, a
`UserError` of one line, an HTTP 422 or 413 with a one-line ``error``), each within
`CASE_SECONDS`, the process's peak memory under `PEAK_RSS_GIB`.

Values out of their bound are drawn from the whole range of their type (2**70, -1, inf,
NaN): they must be refused before any work, so they cost nothing. Values within their
bound are drawn from the small end of it (beam up to 12, a cap up to 48 subwords), so that
a case stays within the bound this test states; the cost of the largest valid values is
the product of the bounds (docs/translation.md, "Bounds").

Default scale: a few seconds each (``RNMT_FUZZ_SCALE=10`` for ten times as many cases).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import resource
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rnmt
from rnmt.cli import main
from rnmt.search import options as so

SCALE = int(os.environ.get("RNMT_FUZZ_SCALE", "1"))
CASE_SECONDS = 30.0  # generous: the machine may be shared; a case takes well under a second alone
PEAK_RSS_GIB = 4.0
SETTINGS = dict(deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
WORDS = ["Y", "dijo", "Dios", "luz", "And", "God", "said", "light", "the", "day", "é", "日本", "\u200b", ""]

ints = st.one_of(st.integers(-2, 12), st.sampled_from([0, 8192, 8193, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40]),
                 st.integers())
floats = st.one_of(st.floats(0, 3), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, 1.0, math.inf, -math.inf, math.nan, 1e300]))
phrase = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
VALUES = {
    "beam": ints, "nbest": ints, "alpha": floats, "coverage": floats, "normalize": st.sampled_from(
        ["gnmt", "length", "none", "bogus"]), "max_len_ratio": floats, "batch_tokens": ints,
    "max_output_tokens": st.one_of(st.integers(-1, 48), st.sampled_from([65537, 10 ** 12])),
    "max_input_tokens": ints, "no_repeat_ngram": ints, "min_output_tokens": st.one_of(st.integers(-1, 50), ints),
    "topk": ints, "topp": floats, "temperature": floats, "seed": ints, "greedy": st.booleans(),
    "sample": st.booleans(), "token_scores": st.booleans(),
}
# the values that make a valid search slow are drawn from the small end when they are valid
SMALL = {"max_output_tokens": 48, "max_len_ratio": 3.0}
LINES = ["Y dijo Dios: Sea la luz.", "", "Y vio Dios que la luz era buena."]


def bounded(name: str, value):
    """A valid ``value`` of an option that makes the search longer, brought to its small end."""
    if name in SMALL and isinstance(value, (int, float)) and so.problem(name, value) is None:
        return min(value, SMALL[name])
    return value


option_sets = st.fixed_dictionaries({}, optional=VALUES).map(lambda d: {k: bounded(k, v) for k, v in d.items()})
per_line = st.one_of(st.none(), st.lists(phrase, min_size=len(LINES), max_size=len(LINES)),
                     st.lists(phrase, max_size=4))


@contextlib.contextmanager
def within_bounds():
    start = time.perf_counter()
    yield
    assert time.perf_counter() - start < CASE_SECONDS
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < PEAK_RSS_GIB * 2 ** 20  # KiB on Linux


@pytest.fixture(scope="module")
def model(tiny_run):
    return rnmt.load(tiny_run, device="cpu")


@settings(max_examples=40 * SCALE, **SETTINGS)
@given(options=option_sets, prefix=per_line, constraints=per_line)
def test_api_options_give_translations_or_one_line_errors(model, options, prefix, constraints):
    if constraints is not None:
        constraints = [[p] if p.strip() else [] for p in constraints]
    with within_bounds():
        try:
            out = model.translate(LINES, prefix=prefix, constraints=constraints, **options)
        except rnmt.UserError as exc:
            assert str(exc) and "\n" not in str(exc)
            return
    assert len(out) == len(LINES)


def flag_args(options: dict) -> list:
    args = []
    for name, value in options.items():
        if isinstance(value, bool):
            args += [so.flag(name)] if value else []
        else:
            args += [so.flag(name), repr(value) if isinstance(value, float) else str(value)]
    return args


@settings(max_examples=25 * SCALE, **SETTINGS)
@given(options=option_sets, prefix=per_line, constraints=per_line)
def test_command_options_exit_0_or_2_with_one_line(tiny_run, options, prefix, constraints):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in.es").write_text("\n".join(LINES) + "\n", encoding="utf-8")
        args = ["translate", "--model", str(tiny_run), "--input", str(root / "in.es"), "--output",
                str(root / "out.en"), "--threads", "1", *flag_args(options)]
        for option, lines in (("--prefix", prefix), ("--constraints", constraints)):
            if lines is not None:
                (root / option[2:]).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
                args += [option, str(root / option[2:])]
        err = io.StringIO()
        with within_bounds(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse's own refusal (an invalid choice): one line too
                code = exc.code
        problems = [line for line in err.getvalue().splitlines() if not line.startswith(("warning: ", "note: "))]
        if code == 0:
            assert not problems and (root / "out.en").is_file()
        else:
            assert code == 2 and len(problems) == 1 and problems[0].startswith("error: "), err.getvalue()
            assert not (root / "out.en").exists()  # nothing half-written


# what JSON can carry (no NaN or infinity, which the client cannot send)
JSON_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(),
                                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12), phrase),
                           lambda inner: st.lists(inner, max_size=3), max_leaves=6)


@pytest.fixture(scope="module")
def client(tiny_run):
    from tests.serve_support import serve_client

    with serve_client(tiny_run, max_texts=4, max_chars=200, max_request_tokens=200, max_batch_tokens=400,
                      max_output_tokens=40) as c:
        yield c


def request_bodies():
    fields = so.names(so.SERVER) + ["text", "texts"]
    typed = {name: VALUES.get(name, JSON_VALUES) for name in fields}
    typed.update(text=phrase, texts=st.lists(phrase, max_size=5), return_alignment=st.booleans(),
                 constraints=st.one_of(st.lists(phrase, max_size=3), st.lists(st.lists(phrase, max_size=2),
                                                                               max_size=5)))
    well_typed = st.fixed_dictionaries({}, optional=typed).map(
        lambda d: {k: v for k, v in d.items() if not (isinstance(v, float) and not math.isfinite(v))})
    anything = st.dictionaries(st.sampled_from(fields + ["bogus"]), JSON_VALUES, max_size=5)
    return st.one_of(well_typed, anything)


@settings(max_examples=60 * SCALE, **SETTINGS)
@given(body=request_bodies())
def test_request_bodies_get_a_translation_or_a_one_line_error(client, body):
    with within_bounds():
        r = client.post("/translate", json=body)
    assert r.status_code in (200, 413, 422), (body, r.status_code, r.text)
    if r.status_code != 200:
        assert "\n" not in r.json()["error"]
    else:
        assert len(r.json()["translations"]) == (1 if "text" in body else len(body.get("texts") or []))


@settings(max_examples=20 * SCALE, **SETTINGS)
@given(raw=st.one_of(st.binary(max_size=64), st.text(max_size=64).map(str.encode),
                     st.integers(1, 50_000).map(lambda n: b"[" * n + b"]" * n)))
def test_raw_bodies_get_a_one_line_error(client, raw):
    with within_bounds():
        r = client.post("/translate", content=raw, headers={"content-type": "application/json"})
    assert r.status_code in (413, 422), (raw[:40], r.status_code, r.text[:200])
    assert "\n" not in r.json()["error"]
