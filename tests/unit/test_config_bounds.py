"""Bounds on what a config may ask for (issue 66 #4, #5, #7): corpus weights and an epoch's
repeats, YAML size checked while parsing, and error messages that quote at most 80
characters of a user's value. Each is a one-line error with exit code 2 before any work."""

from __future__ import annotations

import time
import tracemalloc

import pytest

import rnmt.io.bounded_yaml as bounded_yaml
from rnmt.config import MAX_CORPUS_WEIGHT, ModelConfig, config_from_dict
from rnmt.data.corpora import MAX_EPOCH_PAIRS, check_epoch_size
from rnmt.errors import SHOWN_CHARS, UserError, shown
from rnmt.io.bounded_yaml import MAX_CHARS, YAMLBoundError, load_yaml
from rnmt.models.registry import check_model_config


@pytest.mark.parametrize("weight", [1e5, 1e18, 1e308, 10 ** 400, MAX_CORPUS_WEIGHT + 0.5],
                         ids=["1e5", "1e18", "1e308", "10**400", "bound+0.5"])
def test_a_corpus_weight_above_the_bound_is_one_line(weight):
    with pytest.raises(UserError, match=r"'data.train\[0\].weight' (must be in \(0, 1000\]|is too large)") as info:
        config_from_dict({"data": {"train": [{"prefix": "a", "weight": weight}]}})
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_the_largest_weight_is_accepted():
    cfg = config_from_dict({"data": {"train": [{"prefix": "a", "weight": MAX_CORPUS_WEIGHT}]}})
    assert cfg.data.train[0].weight == MAX_CORPUS_WEIGHT


def test_an_epoch_of_too_many_repeats_is_refused_before_it_is_drawn():
    check_epoch_size([1000, 10], [1000.0, 1.0])  # a million pairs: fine
    with pytest.raises(UserError, match=f"more than {MAX_EPOCH_PAIRS:,}.*lower the weights"):
        check_epoch_size([MAX_EPOCH_PAIRS // 999, 5], [1000.0, 1.0])


def test_a_document_over_the_size_limit_is_refused_before_it_is_parsed():
    text = "model: {arch: '" + "a" * MAX_CHARS + "'}\n"
    started = time.perf_counter()
    with pytest.raises(YAMLBoundError, match=f"more than the {MAX_CHARS:,}"):
        load_yaml(text)
    assert time.perf_counter() - started < 0.5  # PyYAML scans about 1 MB/s of such a line


def test_a_long_list_stops_at_the_bound_while_it_is_composed(monkeypatch):
    """The node count stops the composer at the first value over the bound: the error points
    there, not at the list's start (where a check after parsing would point), and the memory
    is that of the values read so far."""
    monkeypatch.setattr(bounded_yaml, "MAX_VALUES", 1000)
    text = "x: [" + ", ".join(["1"] * 20000) + "]\n"
    tracemalloc.start()
    try:
        with pytest.raises(YAMLBoundError, match="more than 1,000 values") as info:
            load_yaml(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    column = info.value.problem_mark.column
    assert 3 * 995 < column < 3 * 1005  # about the 1,000th item ("1, " each), not column 3
    assert peak < 5 * 2 ** 20


@pytest.mark.parametrize("value", ["a" * 5_000_000, "x\n" * 100_000, list(range(100_000)), ["b" * 10 ** 6] * 50],
                         ids=["5 MB", "lines", "list", "list of long"])
def test_messages_quote_at_most_80_characters_of_a_value(value):
    assert len(shown(value)) <= SHOWN_CHARS and shown(value).endswith("...")
    with pytest.raises(UserError) as info:
        config_from_dict({"train": {"schedule": value}} if isinstance(value, str) else {"train": {"seed": value}})
    assert len(str(info.value)) < 250


def test_a_50_mb_architecture_name_is_a_short_error_at_once():
    started = time.perf_counter()
    with pytest.raises(UserError, match="unknown model.arch 'aaaa") as info:
        check_model_config(ModelConfig(arch="a" * 50_000_000))
    assert len(str(info.value)) < 400 and time.perf_counter() - started < 2
    with pytest.raises(UserError) as info:
        check_model_config(ModelConfig(cell="c" * 10_000_000))
    assert len(str(info.value)) < 400


def test_a_long_key_is_cut_in_messages():
    with pytest.raises(UserError) as info:
        config_from_dict({"train": {"k" * 1_000_000: 1}})
    assert len(str(info.value)) < 1000
    with pytest.raises(YAMLBoundError) as info:
        load_yaml("x: 1\n" + "k" * 1000 + ": 1\n" + "k" * 1000 + ": 2\n")  # PyYAML: keys up to 1,024
    assert len(str(info.value)) < 200
