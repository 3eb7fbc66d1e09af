"""train.optimizer and train.best_metric in training runs: each optimiser trains, a change on
resume is refused, best by dev loss."""

from __future__ import annotations

import json

import pytest

from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree


@pytest.mark.parametrize("name,lr", [("adam", 0.003), ("adadelta", 1.0), ("sgd", 0.5)])
def test_a_tiny_model_trains_with_each_optimizer(tmp_path, tiny_corpus, name, lr):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(optimizer=name, lr=lr, max_steps=12, validate_every=12, warmup_steps=0,
                         schedule="constant", optimizer_options={"momentum": 0.9} if name == "sgd" else {})
    out = tmp_path / name
    trainer = Trainer(config_from_dict(tree), out, log=lambda *_: None)
    assert type(trainer.optimizer).__name__.lower() == {"adam": "adam", "adadelta": "adadelta", "sgd": "sgd"}[name]
    trainer.run()
    losses = [json.loads(x)["loss"] for x in (out / "log.jsonl").read_text().splitlines() if '"loss"' in x]
    assert len(losses) == 12 and losses[-1] < losses[0]  # it learns


def test_an_optimizer_change_on_resume_is_refused(tiny_run, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    with pytest.raises(UserError, match="cannot resume with train.optimizer changed"):
        Trainer(config_from_dict(tree, ["train.optimizer=sgd", "train.max_steps=8"]), tiny_run, resume=True,
                log=lambda *_: None)


def test_best_metric_loss_keeps_the_checkpoint_of_the_lowest_dev_loss(tmp_path, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(max_steps=8, validate_every=2, best_metric="loss", patience=2)
    trainer = Trainer(config_from_dict(tree), tmp_path / "run", log=lambda *_: None)
    figures = iter([(3.0, 1.0), (2.0, 0.5), (2.5, 9.0), (2.4, 9.5)])  # (dev loss, dev BLEU)

    def validate():
        loss, bleu = next(figures)
        return {"dev_loss": loss, "dev_ppl": 1.0, "dev_bleu": bleu, "dev_chrf": 0.0}

    trainer.validate = validate
    summary = trainer.run()
    # the BLEU rises after step 4, the loss does not: by loss, step 4 stays best and patience 2 ends it
    assert summary["best_step"] == 4 and summary["best_value"] == 2.0 and summary["best_dev_bleu"] == 0.5
    assert summary["stop_reason"] == "early_stopping" and summary["steps"] == 8
    from rnmt.models.loading import read_checked

    assert json.loads(json.dumps(read_checked(tmp_path / "run" / "best.safetensors")[0].meta))["step"] == 4
