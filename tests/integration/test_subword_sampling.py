"""Subword regularisation: unigram n-best sampling (Kudo, 2018) and BPE-dropout (Provilkov
et al., 2020), seeded per epoch, training pairs only."""

import numpy as np
import pytest

from rnmt.config import config_from_dict
from rnmt.data import EncodedCorpus, train_spm
from rnmt.data.corpora import TrainingData
from rnmt.data.subword_sampling import SentenceSampler, model_type
from rnmt.training.trainer import Trainer
from tests.support import SAMPLE, tiny_config_tree, write_corpus


@pytest.fixture(scope="module")
def lines():
    es = (SAMPLE / "train.es").read_text(encoding="utf-8").splitlines()[:300]
    return es + ["Un carácter fuera del vocabulario: \u2603 y \u00e6\u00f8 juntos."]


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def vocab(request, lines):
    return train_spm(lines[:-1], 400, model_type=request.param)


def split(ids, lens):
    return [a.tolist() for a in np.split(ids, np.cumsum(lens)[:-1])]


def test_the_model_type_is_read_from_the_model(vocab):
    assert model_type(vocab) in ("bpe", "unigram")


def test_sampled_segmentations_decode_to_the_same_text(vocab, lines):
    sampler = SentenceSampler(vocab, lines, alpha=0.2, dropout=0.3)
    ids, lens = sampler.sample(np.random.default_rng(1))
    sampled = split(ids, lens)
    fixed = vocab.encode_batch(lines)
    assert len(sampled) == len(lines)
    assert [vocab.decode(s) for s in sampled] == [vocab.decode(f) for f in fixed]
    assert sampled != fixed  # something was re-segmented
    assert sum(map(len, sampled)) > sum(map(len, fixed))  # mostly into smaller pieces


def test_the_same_seed_gives_the_same_segmentation(vocab, lines):
    sampler = SentenceSampler(vocab, lines, dropout=0.2)
    a = split(*sampler.sample(np.random.default_rng([1, 4])))
    again = SentenceSampler(vocab, lines, dropout=0.2)  # a new process would build it anew
    assert split(*again.sample(np.random.default_rng([1, 4]))) == a
    assert split(*sampler.sample(np.random.default_rng([1, 5]))) != a


def test_bpe_dropout_zero_is_sentencepieces_segmentation(lines):
    vocab = train_spm(lines[:-1], 400, model_type="bpe")
    sampler = SentenceSampler(vocab, lines, dropout=0.0)
    assert split(*sampler.sample(np.random.default_rng(0))) == vocab.encode_batch(lines)


def test_bpe_dropout_one_leaves_characters(lines):
    vocab = train_spm(lines[:-1], 400, model_type="bpe")
    sampler = SentenceSampler(vocab, lines[:20], dropout=1.0 - 1e-12)
    sampled = split(*sampler.sample(np.random.default_rng(0)))
    for ids in sampled:
        assert all(len(vocab.id_to_piece(i).lstrip("\u2581")) <= 1 for i in ids)


def test_unigram_samples_follow_p_to_the_alpha(lines):
    vocab = train_spm(lines[:-1], 400, model_type="unigram")
    word = "principio"
    sampler = SentenceSampler(vocab, [word] * 4000, alpha=0.5, nbest=4)
    seg = sampler.segmenter
    first = int(np.searchsorted(seg.cum, 0.0, side="right"))
    cands = [seg.cand_ids[seg.cand_start[j]:seg.cand_start[j + 1]].tolist() for j in range(len(seg.cand_lens))]
    assert cands[0] == vocab.encode(word)  # the best of the n-best is the deterministic segmentation
    scores = np.array([sum(vocab.processor.GetScore(i) for i in c) for c in cands]) * 0.5
    expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    sampled = split(*sampler.sample(np.random.default_rng(3)))
    observed = np.array([sum(s == c for s in sampled) for c in cands]) / len(sampled)
    assert first == 0 and len(cands) == 4
    assert np.allclose(observed, expected, atol=0.03)


def test_a_sampled_side_over_max_len_keeps_its_deterministic_segmentation(lines):
    vocab = train_spm(lines[:-1], 400, model_type="bpe")
    src, tgt = lines[:50], lines[50:100]
    fixed_src, fixed_tgt = vocab.encode_batch(src), vocab.encode_batch(tgt)
    corpus = EncodedCorpus.from_id_lists(fixed_src, fixed_tgt)
    max_len = max(len(x) for x in fixed_src + fixed_tgt) + 1
    samplers = (SentenceSampler(vocab, src, dropout=0.9), SentenceSampler(vocab, tgt, dropout=0.9))
    data = TrainingData([corpus], [1.0], seed=1, samplers=samplers, max_len=max_len)
    view = data.view(0)
    kept = 0
    for i in range(50):
        s, t = view.pair(i)
        assert len(s) <= max_len and len(t) + 1 <= max_len
        assert s[-1] == 3 and vocab.decode(s) == vocab.decode(fixed_src[i])
        kept += t.tolist() == fixed_tgt[i]
    assert 0 < kept < 50
    assert data.varies and data.pairs(0) is None
    assert not np.array_equal(view.src_lens, data.view(1).src_lens)
    assert np.array_equal(view.src, data.view(0).src)


def test_dev_stays_deterministic_while_training_pairs_are_sampled(tmp_path):
    tree = tiny_config_tree(write_corpus(tmp_path, "train", 100), write_corpus(tmp_path, "dev", 8, offset=5000))
    tree["data"]["subword_sampling"] = {"enabled": True, "dropout": 0.5}
    trainer = Trainer(config_from_dict(tree), tmp_path / "run", log=lambda *_: None)
    dev = trainer.validate.dev.corpus  # type: ignore[attr-defined]
    dev_lines = (tmp_path / "dev.en").read_text(encoding="utf-8").splitlines()
    assert dev.tgt_ids(0).tolist() == trainer.tgt_vocab.encode(dev_lines[0])
    view = trainer.data.view(0)
    assert not np.array_equal(view.src_lens, trainer.corpus.src_lens)
    for i in range(len(trainer.corpus)):  # the same text, however segmented
        for side, vocab in ((0, trainer.src_vocab), (1, trainer.tgt_vocab)):
            assert vocab.decode(view.pair(i)[side]) == vocab.decode(trainer.corpus.pair(i)[side])
