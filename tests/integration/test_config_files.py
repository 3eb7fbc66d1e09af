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
