"""A new run in a directory that a stopped start left a vocabulary in: the vocabulary is
reused only when it was trained from the same corpus with the same settings
(`rnmt.training.run_vocab`); otherwise it is trained again. Before, any ``spm.model`` in the
directory was taken as it was, whatever the config now said."""

from __future__ import annotations

import pytest

from rnmt.config import config_from_dict
from rnmt.training.run_vocab import RECIPE_FILE, run_vocabularies
from tests.support import tiny_config_tree, write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path, "train", 240), write_corpus(tmp_path, "dev", 12, offset=5000)


def vocabs(out, train, dev, *overrides):
    cfg = config_from_dict(tiny_config_tree(train, dev), list(overrides))
    log: list = []
    out.mkdir(exist_ok=True)
    src, tgt = run_vocabularies(cfg, out, resume=False, init=None, log=log.append)
    return src, tgt, log


def test_the_same_corpus_and_settings_reuse_it_untouched(tmp_path, corpus):
    out = tmp_path / "run"
    first, _, _ = vocabs(out, *corpus)
    before = (out / "spm.model").stat()
    again, _, log = vocabs(out, *corpus)
    assert again.to_bytes() == first.to_bytes()
    assert any(line.startswith("reusing the vocabulary trained earlier") for line in log)
    after = (out / "spm.model").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_another_size_trains_it_again(tmp_path, corpus):
    out = tmp_path / "run"
    first, _, _ = vocabs(out, *corpus)
    second, _, log = vocabs(out, *corpus, "data.vocab.size=200")
    assert first.size == 300 and second.size == 200
    assert any("was made for another corpus or other settings: training it again" in line for line in log)


def test_a_changed_corpus_at_the_same_path_trains_it_again(tmp_path, corpus):
    out = tmp_path / "run"
    first, _, _ = vocabs(out, *corpus)
    train, dev = corpus
    with open(f"{train}.es", "a", encoding="utf-8") as f:
        f.write("zyxwv qqqq jjjj\n")
    with open(f"{train}.en", "a", encoding="utf-8") as f:
        f.write("zyxwv qqqq jjjj\n")
    second, _, log = vocabs(out, train, dev)
    assert any("training it again" in line for line in log)
    assert second.to_bytes() != first.to_bytes()


def test_a_vocabulary_without_its_description_is_not_trusted(tmp_path, corpus):
    out = tmp_path / "run"
    vocabs(out, *corpus)
    (out / RECIPE_FILE).unlink()  # left by an older rnmt, or its start stopped before the description
    _, _, log = vocabs(out, *corpus)
    assert any("training it again" in line for line in log)
    assert (out / RECIPE_FILE).is_file()


def test_separate_vocabularies_replace_a_joint_one_left_behind(tmp_path, corpus):
    out = tmp_path / "run"
    vocabs(out, *corpus)
    src, tgt, _ = vocabs(out, *corpus, "data.vocab.joint=false")
    assert not (out / "spm.model").exists()
    assert (out / "spm.src.model").is_file() and (out / "spm.tgt.model").is_file()
    assert src.to_bytes() != tgt.to_bytes()


def test_a_given_model_replaces_a_trained_one_left_behind(tmp_path, corpus):
    out, other = tmp_path / "run", tmp_path / "other"
    trained, _, _ = vocabs(out, *corpus)
    given, _, _ = vocabs(other, *corpus, "data.vocab.size=200")
    src, tgt, _ = vocabs(out, *corpus, f"data.vocab.model={other / 'spm.model'}")
    assert src.to_bytes() == tgt.to_bytes() == given.to_bytes() != trained.to_bytes()
    assert (out / "spm.model").read_bytes() == given.to_bytes()
    assert not (out / RECIPE_FILE).exists()  # it describes trained vocabularies only
