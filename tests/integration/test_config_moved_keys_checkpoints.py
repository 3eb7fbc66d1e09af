"""Keys that moved to ``model.options``: checkpoints and runs written while they sat at the
top of ``model:`` keep loading, resuming and fine-tuning."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
import yaml
from safetensors import safe_open

from rnmt.cli import main
from rnmt.config import MOVED_MODEL_KEYS, MOVED_TRAIN_KEYS, config_from_dict, load_config
from rnmt.errors import DeprecatedConfigKey, UserError
from rnmt.io.checkpoint_files import FORMAT_VERSION, read_model_file, upgrade_stored_config
from tests.support import REPO

COMPAT = REPO / "tests" / "data" / "compat"


def test_a_stored_checkpoint_of_the_previous_format_is_upgraded_silently():
    path = COMPAT / "dtmt.safetensors"
    with safe_open(str(path), framework="pt") as fh:
        metadata = fh.metadata()
    stored = json.loads(metadata["config"])
    assert metadata["format_version"] == "1" and stored["model"]["enc_depth"] == 4  # the old form, as written
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mf = read_model_file(path)
    assert mf.config.model.options == {"enc_depth": 4, "query_depth": 4, "dec_depth": 4, "positional_encoding": True}
    assert upgrade_stored_config("1", stored)["model"] == mf.config.to_dict()["model"]


def test_a_checkpoint_format_this_version_does_not_know_is_one_line(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "future.safetensors"
    save_file({"model.x": torch.zeros(1)}, str(path),
              metadata={"format": "rnmt-checkpoint", "format_version": "99", "config": "{}", "meta": "{}"})
    with pytest.raises(UserError, match=r"future.safetensors: checkpoint format version 99 is not supported \(this "
                                        r"rnmt reads versions 1, 2"):
        read_model_file(path)


def test_a_checkpoint_saved_now_has_the_new_form_and_loads(tmp_path):
    from rnmt.models.loading import load_model
    from rnmt.training.checkpoint import save_model

    before = load_model(COMPAT / "luong.safetensors")
    path = tmp_path / "now.safetensors"
    save_model(path, before.model, before.config, read_model_file(before.path).vocabs, {"step": 1})
    with safe_open(str(path), framework="pt") as fh:
        metadata = fh.metadata()
    stored = json.loads(metadata["config"])["model"]
    assert metadata["format_version"] == FORMAT_VERSION == "2"
    assert not set(stored) & set(MOVED_MODEL_KEYS) and stored["options"]["attention"] == "local-p"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load_model(path)
    src = torch.tensor([[5, 6, 7, 3]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(src, src != 0, torch.tensor([[2, 8]])),
                                   before.model(src, src != 0, torch.tensor([[2, 8]])), rtol=0, atol=0)


def _old_run(tmp_path: Path) -> tuple:
    """A run directory written before the move (its saved configs in the old form, every
    key resolved), and the same config in the new form with one default written out."""
    with safe_open(str(COMPAT / "dtmt.safetensors"), framework="pt") as fh:
        old = json.loads(fh.metadata()["config"])
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "config.source.yaml"):
        (run / name).write_text(yaml.safe_dump(old, sort_keys=False), encoding="utf-8")
    new = json.loads(json.dumps(old))
    for key in MOVED_MODEL_KEYS:
        del new["model"][key]
    new["model"]["options"] = {"enc_depth": 4, "query_depth": 4, "dec_depth": 4, "positional_encoding": True,
                               "context_projection": False}
    flat = {key: new["train"].pop(key) for key in MOVED_TRAIN_KEYS}  # the optimiser's settings moved too
    new["train"]["optimizer_options"] = {"betas": flat["adam_betas"], "eps": flat["adam_eps"]}
    return run, old, new


def test_an_old_run_resumes_with_its_config_file_in_either_form(tmp_path):
    from rnmt.training.resume import changed_keys, resumed_config

    run, old, new = _old_run(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the run's own files are upgraded silently
        cfg, note = resumed_config(run, new, ["train.max_steps=200"], "new.yaml")
    assert note is None and cfg.train.max_steps == 200
    assert changed_keys(cfg, config_from_dict(new, ["train.max_steps=200"])) == []
    assert cfg.model.options["enc_depth"] == 4 and cfg.model.options["positional_encoding"] is True
    with pytest.warns(DeprecatedConfigKey):  # the user's file, still in the old form
        again, _ = resumed_config(run, old, (), "old.yaml")
    assert changed_keys(again, cfg) == [("train.max_steps", 100, 200)]
    new["model"]["options"]["enc_depth"] = 2
    with pytest.raises(UserError, match="cannot resume with model.options changed"):
        resumed_config(run, new, (), "new.yaml")


def test_init_from_compares_an_old_checkpoint_with_a_new_form_config(tmp_path):
    from rnmt.training.init_from import first_difference

    _, _, new = _old_run(tmp_path)
    checkpoint = read_model_file(COMPAT / "dtmt.safetensors").config.model
    assert first_difference(checkpoint, config_from_dict(new).model) is None
    new["model"]["options"]["enc_depth"] = 2
    assert first_difference(checkpoint, config_from_dict(new).model) == \
        "model.options.enc_depth is 4 in the checkpoint but 2 in the config"


def _as_written_before_the_move(path: Path) -> None:
    """Rewrite a run's file as rnmt wrote it before the keys moved: the moved keys at the
    top of model:, every one of them (a resolved config), and checkpoints of format 1."""

    def old_form(tree: dict) -> dict:
        model = tree["model"]
        options = model.pop("options")
        for key, default in MOVED_MODEL_KEYS.items():
            model[key] = options.pop(key, default)
        model["options"] = options
        return tree

    if path.suffix == ".yaml":
        path.write_text(yaml.safe_dump(old_form(yaml.safe_load(path.read_text(encoding="utf-8"))), sort_keys=False),
                        encoding="utf-8")
        return
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as fh:
        metadata, tensors = fh.metadata(), {k: fh.get_tensor(k) for k in fh.keys()}
    config = old_form(json.loads(metadata["config"]))
    save_file(tensors, str(path), metadata={**metadata, "format_version": "1", "config": json.dumps(config)})


@pytest.mark.parametrize("form", ["new", "old"])
def test_a_run_written_before_the_move_resumes_from_the_command_line(tmp_path, tiny_corpus, capsys, form):
    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], None)
    del tree["data"]["dev"]
    tree["train"]["max_steps"] = 2
    tree["model"].update(arch="dtmt", cell="gru", attention_heads=2,
                         options={"enc_depth": 1, "dec_depth": 1, "positional_encoding": True})
    config, out = tmp_path / "c.yaml", tmp_path / "run"
    config.write_text(yaml.safe_dump(tree), encoding="utf-8")
    assert main(["train", str(config), "--out", str(out)]) == 0
    for path in [out / "config.yaml", out / "config.source.yaml", *out.glob("*.safetensors")]:
        _as_written_before_the_move(path)
    assert "\n  enc_depth: 1\n" in (out / "config.yaml").read_text()  # at the top of model:
    if form == "old":  # the user's file, not converted either
        _as_written_before_the_move(config)
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=3"]) == 0
    warned = sorted(line.split()[1] for line in capsys.readouterr().err.splitlines() if line.startswith("warning:"))
    # the run's own files are upgraded silently; the user's file in the old form warns once per key
    assert warned == ([] if form == "new" else sorted(f"model.{k}" for k in MOVED_MODEL_KEYS))
    assert load_config(out / "config.yaml").model.options == tree["model"]["options"]
    with safe_open(str(out / "ckpt-3.safetensors"), framework="pt") as fh:
        assert fh.metadata()["format_version"] == FORMAT_VERSION
