import pytest

from rnmt.config import config_from_dict, load_config
from rnmt.errors import UserError


def test_unknown_key_names_it_and_suggests_the_closest():
    with pytest.raises(UserError, match=r"unknown config key 'model.hiden_size'; did you mean 'model.hidden_size'"):
        config_from_dict({"model": {"hiden_size": 3}})


def test_unknown_section_is_rejected():
    with pytest.raises(UserError, match="unknown config key 'trian'; did you mean 'train'"):
        config_from_dict({"trian": {}})


def test_wrong_type_names_the_key():
    with pytest.raises(UserError, match="'train.max_steps' must be of type int"):
        config_from_dict({"train": {"max_steps": "many"}})
    with pytest.raises(UserError, match="'model.layer_norm' must be true or false"):
        config_from_dict({"model": {"layer_norm": 1}})


def test_ints_are_accepted_where_floats_are_expected():
    assert config_from_dict({"train": {"lr": 1}}).train.lr == 1.0


def test_set_overrides_use_yaml_values():
    cfg = config_from_dict({}, ["train.max_steps=7", "model.cell=atr", "data.dev=null", "train.lr=5e-4"])
    assert cfg.train.max_steps == 7 and cfg.model.cell == "atr" and cfg.data.dev is None
    assert cfg.train.lr == pytest.approx(5e-4)


def test_bad_override_is_a_user_error():
    with pytest.raises(UserError, match="--set expects key.path=value"):
        config_from_dict({}, ["train.max_steps"])


def test_missing_config_file(tmp_path):
    with pytest.raises(UserError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_invalid_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("train:\n  max_steps: [1,\n")
    with pytest.raises(UserError, match=r"bad.yaml: line \d+ invalid YAML"):
        load_config(path)


def test_quickstart_config_is_valid():
    from conftest import REPO

    cfg = load_config(REPO / "configs" / "quickstart.yaml")
    assert cfg.model.arch == "rnnsearch" and cfg.data.train == "data/sample/train"
