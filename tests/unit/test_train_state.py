"""The typed training state: older files read, newer ones refused."""

import pytest
import torch

from rnmt.errors import UserError
from rnmt.training.state import STATE_VERSION, Progress, TrainState

# The keys a training state had before the version field: what `TrainState.from_dict` must
# still read (older files lack some of them; see test_an_early_version_1_file_gets_...).
VERSION_1_KEYS = {"step", "checkpoint", "optimizer", "sampler", "rng", "cuda_rng", "train_seconds", "wall_seconds",
                  "best_bleu", "best_value", "best_step", "plateau_decays", "plateau_bad", "bad_validations",
                  "checkpoints", "world_size", "corpus_key", "nonfinite_total", "amp"}


def a_state(**progress) -> TrainState:
    return TrainState(progress=Progress(step=7, train_seconds=3.5, wall_seconds=4.0, best_value=0.9, best_bleu=12.5,
                                        best_step=6, bad_validations=1, plateau_decays=2, plateau_bad=1,
                                        nonfinite_total=3, checkpoints=["ckpt-6.safetensors", "ckpt-7.safetensors"],
                                        **progress),
                      checkpoint="ckpt-7.safetensors", optimizer={"state": {}, "param_groups": []},
                      sampler={"epoch": 2, "position": 5}, rng=torch.get_rng_state(), world_size=2,
                      corpus_key="abc", amp="bf16")


def test_the_file_keeps_the_flat_keys_of_version_1_plus_the_version():
    assert set(a_state().to_dict()) == VERSION_1_KEYS | {"version"}
    assert a_state().to_dict()["version"] == STATE_VERSION


def test_an_early_version_1_file_gets_the_defaults_its_code_used():
    # As the first trainer wrote it: no wall-clock, best metric, plateau, non-finite or amp keys.
    raw = {k: v for k, v in a_state().to_dict().items()
           if k not in {"version", "wall_seconds", "best_value", "best_step", "plateau_decays", "plateau_bad",
                        "nonfinite_total", "amp", "world_size", "corpus_key", "cuda_rng"}}
    state = TrainState.from_dict(raw, "old.pt")
    assert state.progress.wall_seconds == 3.5  # the training time stood for it
    assert state.progress.best_value == 12.5  # the best metric was always BLEU
    assert (state.progress.plateau_decays, state.progress.plateau_bad, state.progress.nonfinite_total) == (0, 0, 0)
    assert state.progress.best_step is None and state.amp is None and state.world_size == 1
    assert state.version == STATE_VERSION


def test_a_newer_state_is_refused_naming_the_file():
    raw = dict(a_state().to_dict(), version=STATE_VERSION + 1)
    with pytest.raises(UserError, match=r"run/train_state.pt: training state version \d+ is newer"):
        TrainState.from_dict(raw, "run/train_state.pt")


def test_a_foreign_dict_is_not_a_training_state():
    with pytest.raises(UserError, match="not an rnmt training state .no 'step'"):
        TrainState.from_dict({"epoch": 3}, "x.pt")


def test_training_weights_are_written_only_when_the_run_averages():
    assert "train_weights" not in a_state().to_dict()
    state = TrainState(**{**a_state().__dict__, "train_weights": {"w": torch.ones(2)}})
    back = TrainState.from_dict(state.to_dict(), "s.pt")
    assert torch.equal(back.train_weights["w"], torch.ones(2))


def test_the_plan_is_written_when_the_run_has_one_and_read_back():
    """A state from before plans has none (the set-up then keeps its ``amp``); one with a plan
    gives it back as written, for --resume to reuse."""
    assert "plan" not in a_state().to_dict() and TrainState.from_dict(a_state().to_dict(), "s.pt").plan is None
    plan = {"version": 1, "device": "cpu", "cpu": {}, "choices": {"precision": {"value": "bf16", "reason": "r"}}}
    state = TrainState(**{**a_state().__dict__, "plan": plan})
    assert TrainState.from_dict(state.to_dict(), "s.pt").plan == plan
