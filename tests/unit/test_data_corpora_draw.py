"""Several training corpora with weights (data.train as a list): the draw of an epoch's pairs,
the sampler over them and the config's checks, in memory. Training with them:
tests/integration/test_data_corpora.py."""

import numpy as np
import pytest

from rnmt.config import config_from_dict
from rnmt.data import EncodedCorpus, TokenBatchSampler
from rnmt.data.corpora import ConcatCorpus, TrainingData, epoch_pairs
from rnmt.errors import UserError


# -- the draw of an epoch's pairs ----------------------------------------------------------
def test_whole_weights_repeat_every_pair_exactly():
    pairs = epoch_pairs([5, 3], [1.0, 2.0], seed=1, epoch=0)
    assert np.bincount(pairs, minlength=8).tolist() == [1] * 5 + [2] * 3


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


def test_an_epochs_pairs_depend_only_on_seed_and_epoch():
    a = epoch_pairs([100, 50], [0.3, 1.7], seed=5, epoch=2)
    assert np.array_equal(a, epoch_pairs([100, 50], [0.3, 1.7], seed=5, epoch=2))
    assert not np.array_equal(a, epoch_pairs([100, 50], [0.3, 1.7], seed=5, epoch=3))
    assert not np.array_equal(a, epoch_pairs([100, 50], [0.3, 1.7], seed=6, epoch=2))


def corpus_of(n, start=10):
    return EncodedCorpus.from_id_lists([[start + i % 7] * (1 + i % 5) for i in range(n)],
                                       [[start + i % 3] * (1 + i % 4) for i in range(n)])


def test_concatenated_corpora_read_each_part():
    a, b = corpus_of(4), corpus_of(3, start=50)
    both = ConcatCorpus([a, b])
    assert len(both) == 7
    assert np.array_equal(both.src_ids(5), b.src_ids(1)) and np.array_equal(both.tgt_ids(2), a.tgt_ids(2))
    assert both.src_lens.tolist() == a.src_lens.tolist() + b.src_lens.tolist()


def test_weighted_batches_hold_each_pair_as_often_as_drawn():
    data = TrainingData([corpus_of(40), corpus_of(30, start=60)], [1.0, 2.0], seed=1)
    sampler = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=1, plan=data.plan)
    seen = np.bincount([i for batch in sampler.epoch_batches(0) for i in batch], minlength=70)
    assert seen[:40].tolist() == [1] * 40 and seen[40:].tolist() == [2] * 30


def test_equal_weights_keep_the_sampler_as_for_one_corpus():
    data = TrainingData([corpus_of(40)], [1.0], seed=1)
    assert not data.varies and data.pairs(0) is None
    plain = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=1)
    planned = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=1, plan=data.plan)
    assert list(plain.epoch_batches(2)) == list(planned.epoch_batches(2))


def test_weighted_batches_shard_over_processes_without_loss():
    data = TrainingData([corpus_of(40), corpus_of(30, start=60)], [0.5, 1.5], seed=2)
    sampler = TokenBatchSampler(data.corpus.src_lens, data.corpus.tgt_lens, 60, seed=2, plan=data.plan)
    full = sampler.epoch_batches(1)
    shards = [list(sampler.batches(1, rank, 2)) for rank in range(2)]
    assert len(shards[0]) == len(shards[1])
    dealt = sorted(i for shard in shards for batch in shard for i in batch)
    assert set(dealt) == {i for batch in full for i in batch}


# -- the config ------------------------------------------------------------------------------
def test_the_list_form_reads_mappings_and_plain_prefixes():
    cfg = config_from_dict({"data": {"train": [{"prefix": "a", "weight": 2}, "b"]}})
    assert [(c.prefix, c.weight) for c in cfg.data.train] == [("a", 2.0), ("b", 1.0)]
    assert config_from_dict({"data": {"train": "corpus/train"}}).data.train == "corpus/train"
    again = config_from_dict(cfg.to_dict())  # a run's config.yaml reads back the same
    assert [(c.prefix, c.weight) for c in again.data.train] == [("a", 2.0), ("b", 1.0)]


@pytest.mark.parametrize("train, message", [
    ([{"prefix": "a", "weight": 0}], "'data.train[0].weight' must be in"),
    ([{"prefix": "a", "weight": -1}], "'data.train[0].weight' must be in"),
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


def test_subword_sampling_keys_are_checked():
    with pytest.raises(UserError, match="unknown config key 'data.subword_sampling.dropuot'"):
        config_from_dict({"data": {"subword_sampling": {"dropuot": 0.1}}})
    with pytest.raises(UserError, match=r"'data.subword_sampling.dropout' must be in \[0, 1\)"):
        config_from_dict({"data": {"subword_sampling": {"dropout": 1.0}}})
    assert config_from_dict({}).data.subword_sampling.enabled is False
