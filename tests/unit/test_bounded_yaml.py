"""YAML read within bounds (rnmt/io/bounded_yaml.py): deep nesting, alias bombs and
self-containing values are refused quickly with the line; ordinary documents, anchors
included, read as yaml.safe_load reads them."""

from __future__ import annotations

import time

import pytest
import yaml

from rnmt.io.bounded_yaml import MAX_DEPTH, MAX_VALUES, YAMLBoundError, load_yaml
from rnmt.resources import configs_dir


def laughs(levels: int, width: int = 9) -> str:
    """A 'billion laughs': each anchor a list of ``width`` aliases of the one before."""
    lines = ["x0: &x0 [" + ",".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &x{i} [" + ",".join([f"*x{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_every_builtin_config_reads_as_safe_load_reads_it():
    paths = sorted(configs_dir().rglob("*.yaml"))  # the models' configs and the reproduction specs
    assert len(paths) > 10
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert load_yaml(text) == yaml.safe_load(text), path


def test_anchors_merges_and_empty_documents_within_the_bounds():
    text = "size: &d 256\nmodel: {emb_size: *d, hidden_size: *d}\nbase: &b {lr: 0.1}\ntrain: {<<: *b, seed: 3}\n"
    assert load_yaml(text) == yaml.safe_load(text) == {"size": 256, "model": {"emb_size": 256, "hidden_size": 256},
                                                       "base": {"lr": 0.1}, "train": {"lr": 0.1, "seed": 3}}
    assert load_yaml("") is None and load_yaml("# nothing\n") is None
    assert load_yaml(laughs(4)) == yaml.safe_load(laughs(4))  # 9^4 values: allowed
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) == yaml.safe_load("[" * MAX_DEPTH + "]" * MAX_DEPTH)


def test_a_billion_laughs_is_refused_at_once_with_its_line():
    start = time.perf_counter()
    with pytest.raises(YAMLBoundError, match=f"more than {MAX_VALUES:,} values") as info:
        load_yaml(laughs(10))  # 9^10 values once expanded
    assert time.perf_counter() - start < 5
    assert info.value.problem_mark.line == 5  # x5, the first anchor over the bound (9^6 > 100,000)


def test_deep_nesting_is_refused_before_python_runs_out_of_stack():
    with pytest.raises(YAMLBoundError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_yaml("a:\n  b: " + "[" * 5000 + "]" * 5000)
    with pytest.raises(YAMLBoundError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    chain = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, MAX_DEPTH + 2))
    with pytest.raises(YAMLBoundError, match=f"aliases nest it deeper than {MAX_DEPTH} levels"):
        load_yaml(chain)  # each level shallow, the expansion deep


@pytest.mark.parametrize("text", ["a: &a [1, *a]\n", "a: &a {b: *a}\n", "a: &a [[[*a]]]\n"])
def test_a_value_that_contains_itself_is_refused(text):
    with pytest.raises(YAMLBoundError, match="contains itself"):
        load_yaml(text)


def test_the_refusal_is_a_yaml_error_with_a_mark():
    # callers turn yaml.YAMLError with a problem_mark into 'FILE: line N invalid YAML (...)'
    with pytest.raises(yaml.MarkedYAMLError):
        load_yaml("a: &a [*a]\n")


def test_a_key_given_twice_in_one_mapping_is_refused_with_both_lines():
    # yaml.safe_load keeps the last silently: of two lr lines, the edited one may not count
    text = "train:\n  lr: 0.1\n  max_steps: 3\n  lr: 0.2\n"
    assert yaml.safe_load(text) == {"train": {"lr": 0.2, "max_steps": 3}}
    with pytest.raises(YAMLBoundError, match="key 'lr' given twice in one mapping, first on line 2") as info:
        load_yaml(text)
    assert info.value.problem_mark.line + 1 == 4
    with pytest.raises(YAMLBoundError, match="given twice"):
        load_yaml("{a: 1, b: 2, a: 3}")
    # the same key in different mappings, and a merged key overridden, are fine
    assert load_yaml("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}
    assert load_yaml("base: &b {lr: 0.1, seed: 1}\ntrain: {<<: *b, lr: 0.5}\n")["train"] == {"lr": 0.5, "seed": 1}


def test_an_integer_longer_than_python_reads_is_refused_with_its_line():
    # int() refuses more than 4,300 digits from text: a ValueError inside PyYAML otherwise
    with pytest.raises(YAMLBoundError, match="an integer of 5,000 characters") as info:
        load_yaml("train:\n  max_steps: " + "9" * 5000 + "\n")
    assert info.value.problem_mark.line + 1 == 2
    assert load_yaml("a: " + "9" * 4000) == {"a": int("9" * 4000)}  # within the bound: read as before
    from rnmt.config import parse_overrides

    assert parse_overrides(["train.max_steps=" + "9" * 5000]) == [("train.max_steps", "9" * 5000)]  # a string
