"""train.optimizer (rnmt.training.optimizers): the registry, each optimiser's settings, errors."""

from __future__ import annotations

import pytest
import torch

from rnmt.config import TrainConfig, config_from_dict
from rnmt.errors import UserError
from rnmt.training.optimizers import build_optimizer, optimizer_names, register_optimizer


def test_each_optimizer_is_built_with_its_settings():
    params = [torch.nn.Parameter(torch.zeros(3))]
    assert set(optimizer_names()) >= {"adam", "adadelta", "sgd"}
    adam = build_optimizer(params, TrainConfig(optimizer="adam", adam_betas=[0.8, 0.9], adam_eps=1e-6))
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["betas"] == (0.8, 0.9)
    delta = build_optimizer(params, TrainConfig(optimizer="adadelta", lr=1.0, adadelta_rho=0.9))
    assert isinstance(delta, torch.optim.Adadelta) and delta.defaults["rho"] == 0.9
    sgd = build_optimizer(params, TrainConfig(optimizer="sgd", lr=0.5, momentum=0.9, nesterov=True))
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["nesterov"] and sgd.defaults["momentum"] == 0.9


def test_unknown_optimizers_and_bad_settings_are_user_errors():
    params = [torch.nn.Parameter(torch.zeros(3))]
    with pytest.raises(UserError, match="unknown train.optimizer 'adamw'; choose one of adam, adadelta, sgd"):
        build_optimizer(params, TrainConfig(optimizer="adamw"))
    with pytest.raises(UserError, match="nesterov needs train.momentum"):
        build_optimizer(params, TrainConfig(optimizer="sgd", nesterov=True))
    with pytest.raises(ValueError, match="registered twice"):
        register_optimizer("adam")(lambda params, tc: None)


def test_the_config_accepts_exactly_the_registered_optimizers():
    import typing

    from rnmt.config import Optimizer

    assert set(typing.get_args(Optimizer)) == set(optimizer_names())
    with pytest.raises(UserError, match="did you mean 'adadelta'"):
        config_from_dict({"train": {"optimizer": "adadelt"}})


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
