"""Training with train.ema_decay: validation and checkpoints hold the weights' average, the
training state the training weights, and --resume continues both exactly."""

import json

import pytest
import torch
from safetensors.torch import load_file

from rnmt.config import config_from_dict
from rnmt.training.checkpoint import load_train_state
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree

QUIET = {"log": lambda *_: None}


def _tree(corpus, **train):
    tree = tiny_config_tree(corpus["train"], corpus["dev"])
    tree["train"].update({"max_steps": 6, "validate_every": 0, "save_every": 3, "ema_decay": 0.6, **train})
    return tree


def test_checkpoints_hold_the_average_and_the_state_the_training_weights(tmp_path, tiny_corpus):
    trainer = Trainer(config_from_dict(_tree(tiny_corpus)), tmp_path, **QUIET)
    trainer.run()
    saved = load_file(str(tmp_path / "ckpt-6.safetensors"))
    state = load_train_state(tmp_path / "train_state.pt")
    named = trainer.average.named
    assert set(state["train_weights"]) == set(named)
    differ = 0
    for (name, p), avg in zip(named.items(), trainer.average.average):
        assert torch.equal(state["train_weights"][name], p.detach()), name
        if name in saved:
            assert torch.equal(saved[name], avg), name
        differ += not torch.equal(avg, p.detach())
    assert differ > len(named) // 2  # six updates at decay 0.6 leave the average behind
    best = load_file(str(tmp_path / "best.safetensors"))  # without validation: the newest checkpoint
    assert all(torch.equal(best[k], saved[k]) for k in saved)


def test_validation_scores_the_average(tmp_path, tiny_corpus):
    trainer = Trainer(config_from_dict(_tree(tiny_corpus, validate_every=3)), tmp_path, **QUIET)
    first = next(iter(trainer.average.named.values()))
    seen = []

    def validate():
        seen.append(torch.equal(first.detach(), trainer.average.average[0]))
        return {"dev_loss": 1.0, "dev_ppl": 2.7, "dev_bleu": 1.0, "dev_chrf": 0.0}

    trainer.validate = validate
    trainer.run()
    assert seen == [True, True]
    assert not torch.equal(first.detach(), trainer.average.average[0])  # training weights again after


def test_a_resumed_averaged_run_matches_an_uninterrupted_one(tmp_path, tiny_corpus):
    tree = _tree(tiny_corpus)
    full, part = tmp_path / "full", tmp_path / "part"
    Trainer(config_from_dict(tree), full, **QUIET).run()
    Trainer(config_from_dict(tree, ["train.max_steps=3"]), part, **QUIET).run()
    Trainer(config_from_dict(tree), part, resume=True, **QUIET).run()

    def losses(out):
        records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
        return [r["loss"] for r in records if "loss" in r]

    assert losses(part) == pytest.approx(losses(full), rel=1e-6)
    a, b = load_file(str(full / "ckpt-6.safetensors")), load_file(str(part / "ckpt-6.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k].float(), b[k].float(), atol=1e-6) for k in a)
    wa = load_train_state(full / "train_state.pt")["train_weights"]
    wb = load_train_state(part / "train_state.pt")["train_weights"]
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)


def test_turning_the_average_off_on_resume_trains_on_from_the_training_weights(tmp_path, tiny_corpus):
    tree = _tree(tiny_corpus)
    Trainer(config_from_dict(tree, ["train.max_steps=3"]), tmp_path, **QUIET).run()
    weights = load_train_state(tmp_path / "train_state.pt")["train_weights"]
    notes = []
    resumed = Trainer(config_from_dict(tree, ["train.ema_decay=null"]), tmp_path, resume=True, log=notes.append)
    assert resumed.average is None
    assert all(torch.equal(p.detach(), weights[n]) for n, p in resumed.model.named_parameters())
    assert any("training weights" in str(n) for n in notes)
