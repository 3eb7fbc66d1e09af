"""Keys only one architecture reads live in its options (``model.options``); configs written
while they sat at the top of ``model:`` keep working."""

from __future__ import annotations

import warnings

import pytest
import torch
import yaml

from rnmt.cli import main
from rnmt.config import MOVED_MODEL_KEYS, ModelConfig, config_from_dict, load_config
from rnmt.errors import DeprecatedConfigKey, UserError
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.models.registry import architecture
from tests.support import REPO

# One config per architecture that reads a moved key, in the old form and the new.
CASES = {
    "dtmt": ({"arch": "dtmt", "cell": "lgru", "attention_heads": 2, "enc_depth": 1, "query_depth": 2,
              "dec_depth": 1, "positional_encoding": True, "options": {"per_head_v": True}},
             {"arch": "dtmt", "cell": "lgru", "attention_heads": 2,
              "options": {"enc_depth": 1, "query_depth": 2, "dec_depth": 1, "positional_encoding": True,
                          "per_head_v": True}}),
    "luong": ({"arch": "luong", "cell": "lstm", "attention": "local-p", "options": {"window": 2}},
              {"arch": "luong", "cell": "lstm", "options": {"attention": "local-p", "window": 2}}),
    "cseq2seq1": ({"arch": "cseq2seq1", "context": "last"}, {"arch": "cseq2seq1", "options": {"context": "last"}}),
    "cseq2seq2": ({"arch": "cseq2seq2", "context": "last", "options": {"share_gru": True}},
                  {"arch": "cseq2seq2", "options": {"context": "last", "share_gru": True}}),
    "transformer": ({"arch": "transformer", "emb_size": 8, "attention_heads": 2, "tie_all_embeddings": True,
                     "options": {"ffn_size": 16}},
                    {"arch": "transformer", "emb_size": 8, "attention_heads": 2,
                     "options": {"ffn_size": 16, "tie_all_embeddings": True}}),
}


def sized(model: dict) -> dict:
    return {"emb_size": 6, "hidden_size": 8, **model}


def built(cfg: ModelConfig) -> dict:
    torch.manual_seed(0)
    model = build_model(cfg, 17, 17)
    uniform_init_(model, 0.3)
    src = torch.tensor([[4, 5, 6, 3], [7, 8, 3, 0]])
    model.eval()
    with torch.no_grad():
        logits = model(src, src != 0, torch.tensor([[2, 9, 10], [2, 11, 0]]))
    return {"logits": logits, **model.state_dict()}


def deprecations(record) -> list:
    return sorted(str(w.message).split(" ")[0] for w in record if issubclass(w.category, DeprecatedConfigKey))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_old_form_warns_once_per_key_and_builds_the_same_model(name):
    old, new = CASES[name]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        upgraded = config_from_dict({"model": sized(old)})
    moved = sorted(f"model.{k}" for k in old if k in MOVED_MODEL_KEYS)
    assert deprecations(record) == moved and all("model.options." in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecatedConfigKey)
        current = config_from_dict({"model": sized(new)})
    assert upgraded.model == current.model
    a, b = built(upgraded.model), built(current.model)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_deprecated_key_warns_once_a_process_however_often_the_config_is_read():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        for _ in range(3):
            config_from_dict({"model": {"arch": "cseq2seq1", "context": "last"}})
    assert deprecations(record) == ["model.context"]


def test_an_old_key_at_its_old_default_is_dropped_whatever_the_architecture():
    """A resolved config of the old form holds every moved key, read or not."""
    defaults = dict(MOVED_MODEL_KEYS)
    with pytest.warns(DeprecatedConfigKey):
        cfg = config_from_dict({"model": {"arch": "rnnsearch", **defaults}})
    assert cfg.model == ModelConfig(arch="rnnsearch")
    with pytest.warns(DeprecatedConfigKey):
        dtmt = config_from_dict({"model": {"arch": "dtmt", **defaults, "enc_depth": 3}})
    assert dtmt.model.options == {"enc_depth": 3}
    with pytest.warns(DeprecatedConfigKey):  # 0 is not False: kept, and refused when the model is built
        zero = config_from_dict({"model": {"arch": "dtmt", "positional_encoding": 0}})
    with pytest.raises(UserError, match="model.options.positional_encoding of arch 'dtmt' must be bool, got 0"):
        build_model(zero.model, 20, 20)


def test_both_forms_with_different_values_are_an_error_naming_both():
    with pytest.raises(UserError, match=r"model.enc_depth \(2\) and model.options.enc_depth \(4\) are both given"):
        config_from_dict({"model": {"arch": "dtmt", "enc_depth": 2, "options": {"enc_depth": 4}}})
    with pytest.raises(UserError, match="model.positional_encoding .* model.options.positional_encoding"):
        config_from_dict({"model": {"arch": "dtmt", "positional_encoding": False,
                                    "options": {"positional_encoding": True}}})
    with pytest.warns(DeprecatedConfigKey):  # the same value both ways is one setting
        cfg = config_from_dict({"model": {"arch": "dtmt", "enc_depth": 2, "options": {"enc_depth": 2}}})
    assert cfg.model.options == {"enc_depth": 2}


def test_set_of_an_old_key_sets_the_option_over_the_files_value():
    with pytest.warns(DeprecatedConfigKey, match="model.positional_encoding is deprecated"):
        cfg = load_config("dtmt/dtmt4", ["model.positional_encoding=false", "model.options.dec_depth=2"])
    assert cfg.model.options["positional_encoding"] is False and cfg.model.options["dec_depth"] == 2
    assert cfg.model.options["enc_depth"] == 4


def test_a_misspelled_moved_key_points_to_its_new_place():
    with pytest.raises(UserError, match=r"unknown config key 'model.enc_dpth'; did you mean 'model.options.enc_depth'"):
        config_from_dict({"model": {"arch": "dtmt", "enc_dpth": 2}})
    with pytest.raises(UserError, match=r"model.options.enc_dpth is not an option of arch 'dtmt'; did you mean "
                                        r"'enc_depth'"):
        build_model(ModelConfig(arch="dtmt", options={"enc_dpth": 2}), 20, 20)


def test_options_are_checked_like_config_keys():
    with pytest.raises(UserError, match=r"model.options.enc_depth of arch 'dtmt' must be in \[0, 128\], got -1"):
        build_model(ModelConfig(arch="dtmt", options={"enc_depth": -1}), 20, 20)
    with pytest.raises(UserError, match=r"model.options.context of arch 'cseq2seq1' must be one of mean, last, "
                                        r"got 'lats'; did you mean 'last'"):
        build_model(ModelConfig(arch="cseq2seq1", options={"context": "lats"}), 20, 20)
    with pytest.raises(UserError, match=r"arch 'luong' needs model.options.attention: one of dot, general"):
        build_model(ModelConfig(arch="luong", cell="lstm"), 20, 20)
    with pytest.raises(UserError, match="model.options.attention of arch 'luong' must be one of"):
        build_model(ModelConfig(arch="luong", cell="lstm", options={"attention": "additive"}), 20, 20)


def test_the_command_line_prints_one_warning_line_per_key(capsys):
    assert main(["params", "dtmt/dtmt1", "--set", "model.enc_depth=2", "--set", "model.query_depth=2"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: model.enc_depth is deprecated: write it as model.options.enc_depth (the "
                   "architecture's own options, docs/models.md)",
                   "warning: model.query_depth is deprecated: write it as model.options.query_depth (the "
                   "architecture's own options, docs/models.md)"]


def test_the_command_line_refuses_both_forms_in_one_line(capsys):
    assert main(["params", "dtmt/dtmt4", "--set", "model={arch: dtmt, enc_depth: 1, options: {enc_depth: 4}}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "model.enc_depth" in err[0] \
        and "model.options.enc_depth" in err[0]


def _shipped_configs():
    for root in (REPO / "configs", REPO / "benchmarks" / "configs"):
        yield from sorted(root.rglob("*.yaml"))


def _keys(tree, prefix=""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield f"{prefix}{key}"
            yield from _keys(value, f"{prefix}{key}.")
    elif isinstance(tree, list):
        for item in tree:
            yield from _keys(item, prefix)


def test_no_shipped_config_uses_a_deprecated_key():
    checked = 0
    old = {f"model.{k}" for k in MOVED_MODEL_KEYS}
    for path in _shipped_configs():
        keys = set(_keys(yaml.safe_load(path.read_text(encoding="utf-8"))))
        # a config's model section, and the dotted overrides of a reproduction spec's systems
        used = {k for k in keys if any(k == o or k.endswith(f".{o}") for o in old)}
        assert not used, f"{path.relative_to(REPO)} uses {sorted(used)}: write model.options.KEY"
        checked += 1
    assert checked >= 50


def test_every_option_field_is_typed_as_the_options_parser_checks():
    """An option's annotation must be one the parser knows, and a moved key's default
    the value it had at the top of model:."""
    import dataclasses
    import typing

    from rnmt.models.options import _check_type
    from rnmt.models.registry import architectures

    for name in architectures():
        options = architecture(name).options
        hints = typing.get_type_hints(options, include_extras=True)
        for f in dataclasses.fields(options):
            if f.default is not dataclasses.MISSING:
                assert _check_type(name, f.name, f.default, hints[f.name]) == f.default
            if f.name in MOVED_MODEL_KEYS and f.default is not dataclasses.MISSING:
                assert f.default == MOVED_MODEL_KEYS[f.name], (name, f.name)
