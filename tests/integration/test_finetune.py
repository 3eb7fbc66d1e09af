"""Fine-tuning (--init-from): a fine-tuned run's first loss is far below a fresh run's."""

from __future__ import annotations

import json

import pytest

import rnmt
from rnmt.io.checkpoint_files import read_model_file
from tests.support import tiny_config_tree, write_corpus


def losses(run) -> list:
    return [json.loads(line)["loss"] for line in (run / "log.jsonl").read_text().splitlines()
            if "loss" in json.loads(line)]


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


def test_first_loss_of_a_fine_tuned_run_is_far_below_a_fresh_runs(corpus, parent, tmp_path):
    _, tree = corpus
    one_step = ["train.max_steps=1", "train.lr=0.001"]
    rnmt.train(tree, one_step, out=tmp_path / "fresh", log=lambda *_: None)
    summary = rnmt.train(tree, [*one_step, "data.vocab.size=200"], out=tmp_path / "tuned", init_from=parent,
                         log=lambda *_: None)
    fresh, tuned, trained = losses(tmp_path / "fresh")[0], losses(tmp_path / "tuned")[0], losses(parent)[-1]
    assert tuned < fresh - 0.5  # fresh starts near log(V): the weights came from the parent
    assert tuned == pytest.approx(trained, abs=0.15)  # ... where the parent left off
    assert summary["steps"] == 1  # a fresh schedule: step 0 again, not the parent's 40
    # The parent's vocabulary, not one trained on the new data with the new size.
    assert (tmp_path / "tuned" / "spm.model").read_bytes() == (parent / "spm.model").read_bytes()
    meta = read_model_file(tmp_path / "tuned" / "best.safetensors").meta
    assert meta["init_from"]["step"] == 40 and meta["step"] == 1
