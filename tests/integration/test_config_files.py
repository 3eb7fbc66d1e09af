"""Config files: a missing file and invalid YAML are one-line errors naming the file."""

import pytest

from rnmt.config import load_config
from rnmt.errors import UserError


def test_missing_config_file(tmp_path):
    with pytest.raises(UserError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_invalid_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("train:\n  max_steps: [1,\n")
    with pytest.raises(UserError, match=r"bad.yaml: line \d+ invalid YAML"):
        load_config(path)


@pytest.mark.parametrize("body, problem", [
    ("model:\n  hidden_size: " + "[" * 3000 + "]" * 3000 + "\n",
     r"line 2 invalid YAML \(nested deeper than 64 levels\)"),
    ("model:\n  cell_options:\n    x0: &x0 [1,1,1,1,1,1,1,1,1]\n"
     + "".join(f"    x{i}: &x{i} [" + ",".join([f"*x{i - 1}"] * 9) + "]\n" for i in range(1, 10))
     + "  hidden_size: *x9\n", r"line 8 invalid YAML \(more than 100,000 values, aliases expanded\)"),
    ("train:\n  keep_steps: &k [1000, *k]\n", r"line 2 invalid YAML \(a value contains itself"),
])
def test_hostile_yaml_is_one_line_naming_file_and_line(tmp_path, body, problem):
    # once a traceback (RecursionError) and a hang growing by gigabytes (9^10 values); the
    # bomb's line is x5's, the first anchor over the bound (9^6 values)
    path = tmp_path / "hostile.yaml"
    path.write_text(body)
    with pytest.raises(UserError, match=r"hostile.yaml: " + problem):
        load_config(path)


def test_a_hostile_set_value_is_a_string_the_key_then_refuses(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("train:\n  max_steps: 3\n")
    with pytest.raises(UserError, match="'model.hidden_size' must be of type int"):
        load_config(path, ["model.hidden_size=" + "[" * 3000 + "]" * 3000])
