"""Several training corpora with weights (data.train as a list), and exact resume with
weights and with subword sampling."""

import json

import numpy as np
import pytest
import torch

from conftest import tiny_config_tree, write_corpus
from rnmt.config import config_from_dict
from rnmt.data import EncodedCorpus, TokenBatchSampler
from rnmt.data.corpora import ConcatCorpus, TrainingData, epoch_pairs
from rnmt.errors import UserError
from rnmt.models import load_model
from rnmt.train.trainer import Trainer


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


# -- the draw of an epoch's pairs ----------------------------------------------------------
@pytest.mark.unit
def test_whole_weights_repeat_every_pair_exactly():
    pairs = epoch_pairs([5, 3], [1.0, 2.0], seed=1, epoch=0)
    assert np.bincount(pairs, minlength=8).tolist() == [1] * 5 + [2] * 3


@pytest.mark.unit
def test_fractional_weights_give_the_expected_proportions():
    counts = np.zeros(3000)
    for epoch in range(40):
        counts += np.bincount(epoch_pairs([1000, 1000, 1000], [0.5, 1.0, 2.5], seed=3, epoch=epoch), minlength=3000)
    per_corpus = counts.reshape(3, 1000).mean(axis=1) / 40
    assert per_corpus[1] == 1.0
    assert per_corpus[0] == pytest.approx(0.5, abs=0.02)
    assert per_corpus[2] == pytest.approx(2.5, abs=0.02)
    # 2.5: every pair at least twice and at most three times in each epoch
    one = np.bincount(epoch_pairs([1000, 1000, 1000], [0.5, 1.0, 2.5], seed=3, epoch=7), minlength=3000)
    assert set(one[2000:].tolist()) == {2, 3} and set(one[:1000].tolist()) == {0, 1}


@pytest.mark.unit
def test_an_epochs_pairs_depend_only_on_seed_and_epoch():
    a = epoch_pairs([100, 50], [0.3, 1.7], seed=5, epoch=2)
    assert np.array_equal(a, epoch_pairs([100, 50], [0.3, 1.7], seed=5, epoch=2))
    assert not np.array_equal(a, epoch_pairs([100, 50], [0.3, 1.7], seed=5, epoch=3))
    assert not np.array_equal(a, epoch_pairs([100, 50], [0.3, 1.7], seed=6, epoch=2))


def corpus_of(n, start=10):
    return EncodedCorpus.from_id_lists([[start + i % 7] * (1 + i % 5) for i in range(n)],
                                       [[start + i % 3] * (1 + i % 4) for i in range(n)])


@pytest.mark.unit
def test_concatenated_corpora_read_each_part():
    a, b = corpus_of(4), corpus_of(3, start=50)
    both = ConcatCorpus([a, b])
    assert len(both) == 7
    assert np.array_equal(both.src_ids(5), b.src_ids(1)) and np.array_equal(both.tgt_ids(2), a.tgt_ids(2))
    assert both.src_lens.tolist() == a.src_lens.tolist() + b.src_lens.tolist()


@pytest.mark.unit
def test_weighted_batches_hold_each_pair_as_often_as_drawn():
    data = TrainingData([corpus_of(40), corpus_of(30, start=60)], [1.0, 2.0], seed=1)
    sampler = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=1, plan=data.plan)
    seen = np.bincount([i for batch in sampler.epoch_batches(0) for i in batch], minlength=70)
    assert seen[:40].tolist() == [1] * 40 and seen[40:].tolist() == [2] * 30


@pytest.mark.unit
def test_equal_weights_keep_the_sampler_as_for_one_corpus():
    data = TrainingData([corpus_of(40)], [1.0], seed=1)
    assert not data.varies and data.pairs(0) is None
    plain = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=1)
    planned = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=1, plan=data.plan)
    assert list(plain.epoch_batches(2)) == list(planned.epoch_batches(2))


@pytest.mark.unit
def test_weighted_batches_shard_over_processes_without_loss():
    data = TrainingData([corpus_of(40), corpus_of(30, start=60)], [0.5, 1.5], seed=2)
    sampler = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=2, plan=data.plan)
    full = sampler.epoch_batches(1)
    shards = [list(sampler.batches(1, rank, 2)) for rank in range(2)]
    assert len(shards[0]) == len(shards[1])
    dealt = sorted(i for shard in shards for batch in shard for i in batch)
    assert set(dealt) == {i for batch in full for i in batch}


# -- the config ------------------------------------------------------------------------------
@pytest.mark.unit
def test_the_list_form_reads_mappings_and_plain_prefixes():
    cfg = config_from_dict({"data": {"train": [{"prefix": "a", "weight": 2}, "b"]}})
    assert [(c.prefix, c.weight) for c in cfg.data.train] == [("a", 2.0), ("b", 1.0)]
    assert config_from_dict({"data": {"train": "corpus/train"}}).data.train == "corpus/train"
    again = config_from_dict(cfg.to_dict())  # a run's config.yaml reads back the same
    assert [(c.prefix, c.weight) for c in again.data.train] == [("a", 2.0), ("b", 1.0)]


@pytest.mark.unit
@pytest.mark.parametrize("train, message", [
    ([{"prefix": "a", "weight": 0}], "'data.train[0].weight' must be greater than 0"),
    ([{"prefix": "a", "weight": -1}], "'data.train[0].weight' must be greater than 0"),
    ([{"prefix": "a", "wieght": 2}], "unknown config key 'data.train[0].wieght'; did you mean 'data.train[0].weight'"),
    ([{"weight": 2}], "'data.train[0].prefix' is not set"),
    ([], "'data.train' is an empty list"),
    (["a", {"prefix": "a"}], "'data.train[1]': a is also data.train[0]"),
    (3, "'data.train' must be a string or a list, got 3"),
    ([{"prefix": "a", "weight": "x"}], "'data.train[0].weight' must be of type float"),
])
def test_bad_corpus_lists_are_one_line_errors(train, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
        config_from_dict({"data": {"train": train}})
    assert "\n" not in str(info.value)


@pytest.mark.unit
def test_subword_sampling_keys_are_checked():
    with pytest.raises(UserError, match="unknown config key 'data.subword_sampling.dropuot'"):
        config_from_dict({"data": {"subword_sampling": {"dropuot": 0.1}}})
    with pytest.raises(UserError, match=r"'data.subword_sampling.dropout' must be in \[0, 1\)"):
        config_from_dict({"data": {"subword_sampling": {"dropout": 1.0}}})
    assert config_from_dict({}).data.subword_sampling.enabled is False


# -- training ----------------------------------------------------------------------------------
@pytest.mark.integration
def test_a_missing_corpus_of_the_list_names_its_entry(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora)
    tree["data"]["train"][1]["prefix"] = str(tmp_path / "nowhere")
    with pytest.raises(UserError, match=r"data.train\[1\]: file not found: .*nowhere.es"):
        Trainer(config_from_dict(tree), tmp_path / "run", log=quiet)
    assert not (tmp_path / "run").exists()  # checked before anything is written


@pytest.mark.integration
def test_unequal_line_counts_in_a_corpus_of_the_list_are_refused(tmp_path, two_corpora):
    bad = write_corpus(tmp_path, "bad", 30)
    with open(f"{bad}.en", "a", encoding="utf-8") as fh:
        fh.write("one line more\n")
    tree = weighted_tree(two_corpora)
    tree["data"]["train"][1]["prefix"] = bad
    with pytest.raises(UserError, match="bad.es.*bad.en|bad.en.*bad.es") as info:
        Trainer(config_from_dict(tree), tmp_path / "run", log=quiet)
    assert "\n" not in str(info.value)


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.integration
def test_stop_and_resume_with_weighted_corpora_equals_an_uninterrupted_run(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora, (0.5, 1.5))
    tree["data"]["batch_tokens"] = 1500  # about 10 batches an epoch: the cut and the run cross epochs
    stop_and_resume(tmp_path, tree, total=24, cut=13)


@pytest.mark.integration
def test_stop_and_resume_with_subword_sampling_equals_an_uninterrupted_run(tmp_path, two_corpora):
    tree = weighted_tree(two_corpora, (1.0, 1.0))
    tree["data"]["batch_tokens"] = 1500
    tree["data"]["subword_sampling"] = {"enabled": True, "dropout": 0.2}
    tree["train"]["accumulate"] = 2  # an update's two batches may come from two epochs
    stop_and_resume(tmp_path, tree, total=12, cut=5)


@pytest.mark.integration
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


@pytest.mark.integration
@pytest.mark.parametrize("edit, needles", [
    (lambda t: t["data"]["train"][1].update(weight=0), ["data.train[1].weight", "greater than 0"]),
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
