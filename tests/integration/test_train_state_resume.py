"""The typed training state: saved field by field, and a run resumes exactly from a version-1
file."""

import json
from dataclasses import fields

import pytest
import torch

from rnmt.config import config_from_dict
from rnmt.training.checkpoint import load_train_state, save_train_state
from rnmt.training.state import STATE_VERSION, TrainState
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree
from tests.unit.test_train_state import VERSION_1_KEYS, a_state

# The keys a training state had before the version field: what `TrainState.from_dict` must
# still read (older files lack some of them; see test_an_early_version_1_file_gets_...).


def test_a_state_survives_the_file_field_by_field(tmp_path):
    state = a_state()
    save_train_state(tmp_path / "s.pt", state.to_dict())
    back = TrainState.from_dict(load_train_state(tmp_path / "s.pt"), "s.pt")
    assert back.progress == state.progress
    for f in fields(TrainState):
        if f.name not in ("progress", "rng"):
            assert getattr(back, f.name) == getattr(state, f.name), f.name
    assert torch.equal(back.rng, state.rng)


def test_a_run_resumes_exactly_from_a_version_1_file(tmp_path, tiny_corpus):
    """A run stopped by the code before the version field resumes as if never stopped."""
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(max_steps=6, validate_every=0, save_every=3)
    quiet = {"log": lambda *_: None}
    full, part = tmp_path / "full", tmp_path / "part"
    Trainer(config_from_dict(tree), full, **quiet).run()
    Trainer(config_from_dict(tree, ["train.max_steps=3"]), part, **quiet).run()
    raw = load_train_state(part / "train_state.pt")
    save_train_state(part / "train_state.pt", {k: v for k, v in raw.items() if k in VERSION_1_KEYS})
    resumed = Trainer(config_from_dict(tree), part, resume=True, **quiet)
    assert resumed.step == 3
    resumed.run()

    def losses(out):
        records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
        return [r["loss"] for r in records if "loss" in r]

    assert losses(part) == pytest.approx(losses(full), rel=1e-6)
    assert load_train_state(part / "train_state.pt")["version"] == STATE_VERSION
