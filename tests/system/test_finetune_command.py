"""Fine-tuning (--init-from) through `rnmt train`: another architecture and a foreign
checkpoint are one-line errors."""

from __future__ import annotations

import json

import pytest

import rnmt
from tests.support import assert_one_line_error, run_rnmt, tiny_config_tree, write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("finetune")
    return root, tiny_config_tree(write_corpus(root, "train", 40), write_corpus(root, "dev", 4, offset=5000))


@pytest.fixture(scope="module")
def parent(corpus):
    """A model trained long enough to be well off its initialisation."""
    root, tree = corpus
    rnmt.train(tree, ["train.max_steps=40", "train.lr=0.01", "train.warmup_steps=1", "train.validate_every=1000"],
               out=root / "parent", log=lambda *_: None)
    return root / "parent"


def test_a_different_architecture_is_refused_before_anything_is_written(corpus, parent, tmp_path):
    root, tree = corpus
    config = tmp_path / "config.json"  # JSON is YAML
    config.write_text(json.dumps(tree), encoding="utf-8")
    out = tmp_path / "out"
    result = run_rnmt("train", config, "--out", out, "--init-from", parent, "--set", "model.hidden_size=32",
                      "--set", "model.dropout=0.3")  # dropout may change; the size may not
    assert_one_line_error(result, "--init-from", "model.hidden_size is 24 in the checkpoint but 32 in the config")
    assert not out.exists()


def test_a_foreign_checkpoint_is_a_one_line_error(corpus, tmp_path):
    root, tree = corpus
    config, foreign = tmp_path / "config.json", tmp_path / "foreign.safetensors"
    config.write_text(json.dumps(tree), encoding="utf-8")
    foreign.write_bytes(b"not a checkpoint at all")
    assert_one_line_error(run_rnmt("train", config, "--out", tmp_path / "out", "--init-from", foreign),
                          "foreign.safetensors")
