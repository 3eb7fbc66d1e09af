"""Training on several corpora with weights (data.train as a list): errors, the vocabulary, and
exact resume with weights and with subword sampling. The draw itself:
tests/unit/test_data_corpora_draw.py."""

import json

import pytest
import torch

from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.models import load_model
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree, write_corpus


def quiet(*_, **__):
    pass


@pytest.fixture(scope="module")
def two_corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpora")
    return {"a": write_corpus(root, "a", 120), "b": write_corpus(root, "b", 60, offset=400),
            "dev": write_corpus(root, "dev", 12, offset=5000), "root": root}


def weighted_tree(c, weights=(1.0, 2.0)):
    tree = tiny_config_tree(c["a"], c["dev"])
    tree["data"]["train"] = [{"prefix": c["a"], "weight": weights[0]}, {"prefix": c["b"], "weight": weights[1]}]
    return tree


def train_losses(out):
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if "loss" in r}


# -- training ----------------------------------------------------------------------------------
def test_a_missing_corpus_of_the_list_names_its_entry(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora)
    tree["data"]["train"][1]["prefix"] = str(tmp_path / "nowhere")
    with pytest.raises(UserError, match=r"data.train\[1\]: file not found: .*nowhere.es"):
        Trainer(config_from_dict(tree), tmp_path / "run", log=quiet)
    assert not (tmp_path / "run").exists()  # checked before anything is written


def test_unequal_line_counts_in_a_corpus_of_the_list_are_refused(tmp_path, two_corpora):
    bad = write_corpus(tmp_path, "bad", 30)
    with open(f"{bad}.en", "a", encoding="utf-8") as fh:
        fh.write("one line more\n")
    tree = weighted_tree(two_corpora)
    tree["data"]["train"][1]["prefix"] = bad
    with pytest.raises(UserError, match="bad.es.*bad.en|bad.en.*bad.es") as info:
        Trainer(config_from_dict(tree), tmp_path / "run", log=quiet)
    assert "\n" not in str(info.value)


def test_the_vocabulary_is_trained_on_every_corpus(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora)
    tree["train"]["max_steps"] = 1
    tree["train"]["validate_every"] = 0
    trainer = Trainer(config_from_dict(tree), tmp_path / "run", log=quiet)
    assert len(trainer.data.parts) == 2 and trainer.data.weighted
    assert len(trainer.corpus) == sum(len(p) for p in trainer.data.parts)
    only_a = tiny_config_tree(two_corpora["a"], two_corpora["dev"])
    only_a["train"]["max_steps"] = 1
    other = Trainer(config_from_dict(only_a), tmp_path / "a", log=quiet)
    assert trainer.src_vocab != other.src_vocab


def test_a_one_corpus_list_trains_as_the_plain_prefix(tmp_path, two_corpora):
    plain = tiny_config_tree(two_corpora["a"], two_corpora["dev"])
    plain["train"]["max_steps"] = 4
    listed = json.loads(json.dumps(plain))
    listed["data"]["train"] = [{"prefix": two_corpora["a"], "weight": 1}]
    Trainer(config_from_dict(plain), tmp_path / "plain", log=quiet).run()
    Trainer(config_from_dict(listed), tmp_path / "listed", log=quiet).run()
    assert train_losses(tmp_path / "plain") == train_losses(tmp_path / "listed")


def stop_and_resume(tmp_path, tree, total=8, cut=4):
    tree["train"]["max_steps"] = total
    full = tmp_path / "full"
    Trainer(config_from_dict(tree), full, log=quiet).run()
    part = tmp_path / "part"
    Trainer(config_from_dict(tree, [f"train.max_steps={cut}"]), part, log=quiet).run()
    resumed = Trainer(config_from_dict(tree), part, resume=True, log=quiet)
    assert resumed.step == cut
    resumed.run()
    a, b = train_losses(full), train_losses(part)
    assert sorted(a) == sorted(b) == list(range(1, total + 1))
    for step in a:
        assert a[step] == pytest.approx(b[step], rel=1e-6), step
    wa = load_model(full / f"ckpt-{total}.safetensors").model.state_dict()
    wb = load_model(part / f"ckpt-{total}.safetensors").model.state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-7) for k in wa)
    return a


def test_stop_and_resume_with_weighted_corpora_equals_an_uninterrupted_run(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora, (0.5, 1.5))
    tree["data"]["batch_tokens"] = 1500  # about 10 batches an epoch: the cut and the run cross epochs
    stop_and_resume(tmp_path, tree, total=24, cut=13)


def test_stop_and_resume_with_subword_sampling_equals_an_uninterrupted_run(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora, (1.0, 1.0))
    tree["data"]["batch_tokens"] = 1500
    tree["data"]["subword_sampling"] = {"enabled": True, "dropout": 0.2}
    tree["train"]["accumulate"] = 2  # an update's two batches may come from two epochs
    stop_and_resume(tmp_path, tree, total=12, cut=5)


def test_resume_refuses_changed_weights_but_not_moved_files(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora)
    tree["train"]["max_steps"] = 2
    tree["train"]["validate_every"] = 0
    Trainer(config_from_dict(tree), tmp_path / "run", log=quiet).run()
    with pytest.raises(UserError, match="cannot resume with data.train changed"):
        Trainer(config_from_dict(weighted_tree(two_corpora, (1.0, 3.0))), tmp_path / "run", resume=True, log=quiet)
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("b.es", "b.en"):
        (moved / name).write_bytes((two_corpora["root"] / name).read_bytes())
    tree["data"]["train"][1]["prefix"] = str(moved / "b")
    tree["train"]["max_steps"] = 3
    Trainer(config_from_dict(tree), tmp_path / "run", resume=True, log=quiet).run()


@pytest.mark.parametrize("edit, needles", [
    (lambda t: t["data"]["train"][1].update(weight=0), ["data.train[1].weight", "(0, 1000]"]),
    (lambda t: t["data"]["train"][0].update(weight=-2), ["data.train[0].weight", "-2"]),
    (lambda t: t["data"]["train"][1].update(wieght=2), ["unknown config key 'data.train[1].wieght'"]),
    (lambda t: t["data"]["train"][1].update(prefix="/nowhere/b"), ["data.train[1]: file not found: /nowhere/b.es"]),
    (lambda t: t["data"].update(subword_sampling={"enabled": "yes"}), ["data.subword_sampling.enabled"]),
])
def test_rnmt_train_stops_on_a_bad_corpus_list_with_one_line(tmp_path, two_corpora, capsys, edit, needles):
    import yaml

    from rnmt.cli import main

    tree = weighted_tree(two_corpora)
    edit(tree)
    cfg, out = tmp_path / "c.yaml", tmp_path / "run"
    cfg.write_text(yaml.safe_dump(tree))
    assert main(["train", str(cfg), "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert all(needle in lines[0] for needle in needles), lines
    assert not out.exists()
