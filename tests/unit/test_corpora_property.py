"""Generated ``data.train`` values (issue 66, "What to build" 3): lists of corpora with
weights of every kind (tiny, huge, negative, non-finite, strings, booleans, integers past a
float), plain prefixes, nested lists, extra keys and long lists, given as a dict and as YAML
text. Each case either loads or is a one-line `UserError` of at most 400 characters, within
5 s of CPU time and 64 MiB of Python allocations; an accepted list's epochs hold what its weights say
and never more than the bound on repeats.

Default scale: 40 cases per test, a few seconds on an idle machine. More: RNMT_FUZZ_SCALE=10.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rnmt.config import MAX_CORPUS_WEIGHT, config_from_dict, load_config
from rnmt.data.corpora import MAX_EPOCH_PAIRS, check_epoch_size, epoch_pairs
from rnmt.errors import UserError

SCALE = int(os.environ.get("RNMT_FUZZ_SCALE", "1"))
# the bounds every case is held to (the time allows for tracemalloc's overhead and a busy machine)
SECONDS, BYTES, MESSAGE = 5.0, 64 * 2 ** 20, 400
# the same cases every run: a CI failure reproduces here
FEW_CASES = settings(max_examples=40 * SCALE, deadline=None, database=None, derandomize=True,
                     suppress_health_check=list(HealthCheck))

weights = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-9, max_value=2 * MAX_CORPUS_WEIGHT),
    st.integers(min_value=-10, max_value=10 ** 30),
    st.sampled_from([0, 1, 1e5, 1e18, 1e308, 10 ** 400, "2", "x", True, None, [], {}]),
)
prefixes = st.one_of(st.text(min_size=0, max_size=20), st.sampled_from(["a", "b", "corpus/train", "x" * 5000]),
                     st.integers(), st.none())
corpus = st.one_of(
    prefixes,
    st.fixed_dictionaries({"prefix": prefixes}, optional={"weight": weights}),
    st.fixed_dictionaries({"prefix": prefixes, "weight": weights},
                          optional={"wieght": weights, "extra": st.integers()}),
)
train_values = st.one_of(
    prefixes,
    st.lists(corpus, max_size=8),
    st.lists(st.lists(corpus, max_size=3), max_size=3),  # nesting where none belongs
    st.builds(lambda n, w: [{"prefix": f"c{i}", "weight": w} for i in range(n)],
              st.integers(0, 1500), weights),  # long lists
    st.dictionaries(st.text(max_size=5), corpus, max_size=3),
)


def _bounded(load) -> object:
    """``load()``'s config or its `UserError`, checked against the stated bounds."""
    tracemalloc.start()
    started = time.process_time()  # CPU time: a loaded machine does not fail the bound
    try:
        result: object = load()
    except UserError as exc:
        result = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.process_time() - started < SECONDS
    assert peak < BYTES
    if isinstance(result, UserError):
        text = str(result)
        assert "\n" not in text and 0 < len(text) <= MESSAGE, text[:200]
    return result


def _check_accepted(cfg) -> None:
    train = cfg.data.train
    if not isinstance(train, list):
        return
    for c in train:
        assert 0 < c.weight <= MAX_CORPUS_WEIGHT and math.isfinite(c.weight)
    sizes = [3] * len(train)
    check_epoch_size(sizes, [c.weight for c in train])  # a few pairs each: always within the bound
    if len(train) <= 8:
        pairs = epoch_pairs(sizes, [c.weight for c in train], seed=1, epoch=0)
        assert len(pairs) <= sum(math.ceil(c.weight) * 3 for c in train)
        assert len(pairs) >= sum(math.floor(c.weight) * 3 for c in train)


@FEW_CASES
@given(train_values)
def test_a_generated_train_list_loads_or_is_one_line(value):
    result = _bounded(lambda: config_from_dict({"data": {"train": value}}))
    if not isinstance(result, UserError):
        _check_accepted(result)


@FEW_CASES
@given(train_values)
def test_the_same_as_yaml_text_loads_or_is_one_line(value):
    try:
        text = yaml.safe_dump({"data": {"train": value}})
    except (yaml.YAMLError, OverflowError, ValueError):
        return  # not a value YAML writes
    text = text[:20_000] if len(text) > 20_000 else text  # a cut document: invalid YAML, also one line
    with tempfile.TemporaryDirectory() as tmp:  # as a user's file: invalid YAML is one line there
        path = Path(tmp) / "c.yaml"
        path.write_text(text, encoding="utf-8")
        result = _bounded(lambda: load_config(path))
    if not isinstance(result, UserError):
        _check_accepted(result)


@FEW_CASES
@given(st.lists(st.tuples(st.integers(0, 10 ** 9), st.floats(1e-6, MAX_CORPUS_WEIGHT)), min_size=1, max_size=6))
def test_an_epochs_size_is_checked_before_it_is_drawn(parts):
    sizes, ws = [n for n, _ in parts], [w for _, w in parts]
    result = _bounded(lambda: check_epoch_size(sizes, ws))
    total = sum(math.ceil(w) * n for n, w in parts)
    assert isinstance(result, UserError) == (total > MAX_EPOCH_PAIRS)
