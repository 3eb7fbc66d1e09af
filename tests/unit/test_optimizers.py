"""train.optimizer (rnmt.training.optimizers): the registry, each optimiser's settings, errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pytest
import torch

from rnmt.config import POSITIVE, PROBABILITY, TrainConfig, config_from_dict
from rnmt.errors import UserError
from rnmt.training.optimizers import AdamOptions, build_optimizer, optimizer_names, register_optimizer


def test_each_optimizer_is_built_with_its_settings():
    params = [torch.nn.Parameter(torch.zeros(3))]
    assert set(optimizer_names()) >= {"adam", "adadelta", "sgd"}
    adam = build_optimizer(params, TrainConfig(optimizer="adam", optimizer_options={"betas": [0.8, 0.9], "eps": 1e-6}))
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["betas"] == (0.8, 0.9)
    delta = build_optimizer(params, TrainConfig(optimizer="adadelta", lr=1.0, optimizer_options={"rho": 0.9}))
    assert isinstance(delta, torch.optim.Adadelta) and delta.defaults["rho"] == 0.9
    sgd = build_optimizer(params, TrainConfig(optimizer="sgd", lr=0.5,
                                              optimizer_options={"momentum": 0.9, "nesterov": True}))
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["nesterov"] and sgd.defaults["momentum"] == 0.9


def test_unknown_optimizers_and_bad_settings_are_user_errors():
    params = [torch.nn.Parameter(torch.zeros(3))]
    with pytest.raises(UserError, match="unknown train.optimizer 'adamw'; did you mean 'adam'"):
        build_optimizer(params, TrainConfig(optimizer="adamw"))
    with pytest.raises(UserError, match="unknown train.optimizer 'xyz'; known: adadelta, adam, sgd"):
        build_optimizer(params, TrainConfig(optimizer="xyz"))
    with pytest.raises(UserError, match="nesterov needs momentum > 0"):
        build_optimizer(params, TrainConfig(optimizer="sgd", optimizer_options={"nesterov": True}))
    with pytest.raises(UserError, match=r"'train.optimizer_options.eps' must be greater than 0"):
        build_optimizer(params, TrainConfig(optimizer="adam", optimizer_options={"eps": -1}))
    with pytest.raises(ValueError, match="registered twice"):
        register_optimizer("adam", AdamOptions)(lambda params, tc, options: None)


def test_an_unknown_optimizer_is_refused_before_training():
    from rnmt.training.optimizers import optimizer_options

    with pytest.raises(UserError, match="did you mean 'adadelta'"):
        optimizer_options(config_from_dict({"train": {"optimizer": "adadelt"}}).train)


def test_adam_runs_pytorchs_fused_kernel_with_the_loops_update():
    torch.manual_seed(0)
    start = torch.randn(5, 4)
    grads = [torch.randn(5, 4) for _ in range(3)]
    tc = TrainConfig(optimizer="adam", lr=0.01, weight_decay=0.01)
    results = []
    for fused in (True, False):
        p = torch.nn.Parameter(start.clone())
        opt = build_optimizer([p], tc)
        if not fused:  # the loop implementation PyTorch picks on a CPU by default
            opt = torch.optim.Adam([p], lr=0.01, weight_decay=0.01, foreach=False)
        assert bool(opt.param_groups[0]["fused"]) is fused
        for g in grads:
            p.grad = g.clone()
            opt.step()
        results.append(p.detach())
    torch.testing.assert_close(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_a_loop_adams_state_resumes_in_the_fused_one():
    """Checkpoints written before Adam was fused resume, and keep their implementation."""
    p = torch.nn.Parameter(torch.ones(3))
    old = torch.optim.Adam([p], lr=0.1, foreach=False)
    p.grad = torch.ones(3)
    old.step()
    new = build_optimizer([p], TrainConfig(optimizer="adam", lr=0.1))
    new.load_state_dict(old.state_dict())
    p.grad = torch.ones(3)
    new.step()
    assert int(new.state[p]["step"]) == 2 and not new.param_groups[0]["fused"]


def test_betas_are_two_probabilities():
    from rnmt.training.optimizers import optimizer_options

    with pytest.raises(UserError, match=r"'train.optimizer_options.betas\[1\]' must be in \[0, 1\)"):
        optimizer_options(TrainConfig(optimizer_options={"betas": [0.9, 1.5]}))
    with pytest.raises(UserError, match="betas must be two numbers"):
        build_optimizer([torch.nn.Parameter(torch.zeros(2))], TrainConfig(optimizer_options={"betas": [0.9]}))


@pytest.mark.filterwarnings("ignore::rnmt.errors.DeprecatedConfigKey")
@pytest.mark.parametrize("optimizer, key, value", [
    ("adam", "nesterov", True), ("adam", "momentum", 0.9), ("adam", "adadelta_rho", 0.5),
    ("adadelta", "adam_betas", [0.8, 0.9]), ("adadelta", "adam_eps", 1e-3), ("sgd", "adam_eps", 1e-3),
    ("sgd", "adadelta_eps", 1e-3), ("adadelta", "nesterov", True),
])
def test_a_setting_of_another_optimizer_is_refused_naming_both(optimizer, key, value):
    """Issue 66 #11: train.nesterov with Adam was silently ignored. Every optimiser-specific
    key given with another optimiser is one line naming the key and both optimisers, in the
    flat form of before (config load) and in train.optimizer_options (before training)."""
    from rnmt.config import MOVED_TRAIN_KEYS
    from rnmt.training.optimizers import optimizer_options

    owner, name, _ = MOVED_TRAIN_KEYS[key]
    with pytest.raises(UserError, match=rf"train.{key} is a setting of optimizer '{owner}', but train.optimizer "
                                        rf"is '{optimizer}': it would do nothing") as info:
        config_from_dict({"train": {"optimizer": optimizer, key: value}})
    assert "\n" not in str(info.value)
    tc = config_from_dict({"train": {"optimizer": optimizer, "optimizer_options": {name: value}}}).train
    if name in ("eps",):  # adam, adadelta and ... each have an eps of their own: the nested one is theirs
        return
    with pytest.raises(UserError, match=rf"train.optimizer_options.{name} is a setting of optimizer '{owner}', "
                                        rf"but train.optimizer is '{optimizer}'"):
        optimizer_options(tc)


def test_the_command_line_refuses_nesterov_with_adam(capsys):
    from rnmt.cli import main

    assert main(["params", "quickstart", "--set", "train.nesterov=true"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("error: ") and "nesterov" in err[-1] and "adam" in err[-1]


@pytest.mark.filterwarnings("error::rnmt.errors.DeprecatedConfigKey")
def test_the_flat_keys_of_before_still_load():
    """A config written before optimizer_options (a run's config.yaml holds every flat key)
    loads: its own optimiser's keys move, the others' defaults are dropped."""
    import warnings

    old = {"optimizer": "sgd", "momentum": 0.9, "nesterov": True, "adam_betas": [0.9, 0.999], "adam_eps": 1e-8,
           "adadelta_rho": 0.95, "adadelta_eps": 1e-6}
    cfg = config_from_dict({"train": old}, warn_deprecated=False)  # as rnmt reads its own files: silently
    assert cfg.train.optimizer_options == {"momentum": 0.9, "nesterov": True}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cfg = config_from_dict({"train": {"optimizer": "adam", "adam_eps": 1e-6, "momentum": 0.0}})
    assert cfg.train.optimizer_options == {"eps": 1e-6}
    assert any("train.adam_eps is deprecated: write it as train.optimizer_options.eps" in str(w.message) for w in seen)
    with pytest.raises(UserError, match="train.adam_eps .* and train.optimizer_options.eps .* are both given"):
        config_from_dict({"train": {"adam_eps": 1e-6, "optimizer_options": {"eps": 1e-7}}}, warn_deprecated=False)
    # a --set of a flat key lands in optimizer_options, over the file's nested value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = config_from_dict({"train": {"optimizer_options": {"eps": 1e-7}}}, ["train.adam_eps=0.00001"])
    assert cfg.train.optimizer_options == {"eps": 1e-5}


@dataclass(frozen=True)
class RMSpropOptions:
    alpha: Annotated[float, PROBABILITY] = 0.99
    eps: Annotated[float, POSITIVE] = 1e-8


def test_adding_an_optimizer_is_an_options_dataclass_and_a_decorated_builder(monkeypatch):
    """docs/architecture.md, "Adding an optimiser": the example there, registered and used."""
    from rnmt.training import optimizers

    monkeypatch.setattr(optimizers.OPTIMIZERS, "_entries", dict(optimizers.OPTIMIZERS._entries))

    @optimizers.register_optimizer("rmsprop", RMSpropOptions)
    def rmsprop(params, tc, options: RMSpropOptions) -> torch.optim.Optimizer:
        return torch.optim.RMSprop(params, lr=tc.lr, alpha=options.alpha, eps=options.eps,
                                   weight_decay=tc.weight_decay)

    tc = config_from_dict({"train": {"optimizer": "rmsprop", "optimizer_options": {"alpha": 0.9}}}).train
    opt = build_optimizer([torch.nn.Parameter(torch.zeros(2))], tc)
    assert isinstance(opt, torch.optim.RMSprop) and opt.defaults["alpha"] == 0.9
    assert "rmsprop" in optimizer_names()
    with pytest.raises(UserError, match=r"train.optimizer_options.alpah is not an option of optimizer 'rmsprop'; "
                                        r"did you mean 'alpha'\?"):
        optimizers.optimizer_options(config_from_dict({"train": {"optimizer": "rmsprop",
                                                                  "optimizer_options": {"alpah": 0.9}}}).train)
