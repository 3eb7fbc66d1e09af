"""Fine-tuning (--init-from): a fine-tuned run's first loss is far below a fresh run's."""

from __future__ import annotations

import json

import pytest

import rnmt
from rnmt.io.checkpoint_files import read_model_file


def losses(run) -> list:
    return [json.loads(line)["loss"] for line in (run / "log.jsonl").read_text().splitlines()
            if "loss" in json.loads(line)]


def test_first_loss_of_a_fine_tuned_run_is_far_below_a_fresh_runs(finetune_corpus, finetune_parent, tmp_path):
    _, tree = finetune_corpus
    one_step = ["train.max_steps=1", "train.lr=0.001"]
    rnmt.train(tree, one_step, out=tmp_path / "fresh", log=lambda *_: None)
    summary = rnmt.train(tree, [*one_step, "data.vocab.size=200"], out=tmp_path / "tuned", init_from=finetune_parent,
                         log=lambda *_: None)
    fresh, tuned, trained = losses(tmp_path / "fresh")[0], losses(tmp_path / "tuned")[0], losses(finetune_parent)[-1]
    assert tuned < fresh - 0.5  # fresh starts near log(V): the weights came from the parent
    assert tuned == pytest.approx(trained, abs=0.15)  # ... where the parent left off
    assert summary["steps"] == 1  # a fresh schedule: step 0 again, not the parent's 40
    # The parent's vocabulary, not one trained on the new data with the new size.
    assert (tmp_path / "tuned" / "spm.model").read_bytes() == (finetune_parent / "spm.model").read_bytes()
    meta = read_model_file(tmp_path / "tuned" / "best.safetensors").meta
    assert meta["init_from"]["step"] == 40 and meta["step"] == 1
