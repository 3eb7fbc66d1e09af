"""The worked examples of docs/architecture.md ("Adding a unit", "Adding an optimiser") run
as written: each registers itself in its registry, a config selects it by name, and its
options are checked as the built-in entries' are. Also the registry helper's own rules."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Annotated

import pytest
import torch
from torch import nn

from rnmt import cells
from rnmt.cells import registry as unit_registry
from rnmt.cells.base import Cell
from rnmt.config import POSITIVE, PROBABILITY, TrainConfig, config_from_dict
from rnmt.errors import UserError
from rnmt.registry import Registry
from rnmt.training import optimizers
from tests.support import REPO

DOC = REPO / "docs" / "architecture.md"


def _example(needle: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return next(b for b in blocks if needle in b)


def test_the_documented_unit_registers_and_builds(monkeypatch):
    monkeypatch.setattr(unit_registry.UNITS, "_entries", dict(unit_registry.UNITS._entries))
    namespace: dict = {"__name__": "mgu_example"}
    exec(compile(_example('@register("mgu")'), "docs/architecture.md", "exec"), namespace)
    assert "mgu" in cells.registered_names() and set(cells.unit_options("mgu")) == {"layer_norm", "dropout"}
    cell = cells.build("mgu", 4, 6)
    x, mask = torch.randn(2, 5, 4), torch.ones(2, 5, dtype=torch.bool)
    outputs, last, _ = cells.run_cell(cell, x, mask)
    assert outputs.shape == (2, 5, 6) and torch.isfinite(outputs).all()
    with pytest.raises(UserError, match=r"cell 'mgu': unknown option 'layer_nrom'; did you mean 'layer_norm'"):
        cells.build("mgu", 4, 6, layer_nrom=True)
    from rnmt.models import build_model

    cfg = config_from_dict({"model": {"arch": "rnnsearch", "cell": "mgu", "emb_size": 8, "hidden_size": 6}})
    model = build_model(cfg.model, 11, 13)
    assert sum(isinstance(m, namespace["MGU"]) for m in model.modules()) >= 3  # two encoder directions, decoder


def test_the_documented_optimizer_registers_and_builds(monkeypatch):
    monkeypatch.setattr(optimizers.OPTIMIZERS, "_entries", dict(optimizers.OPTIMIZERS._entries))
    namespace = {**vars(optimizers), "Annotated": Annotated, "dataclass": dataclass,
                 "POSITIVE": POSITIVE, "PROBABILITY": PROBABILITY}
    exec(compile("from __future__ import annotations\n" + _example('@register_optimizer("rmsprop"'),
                 "docs/architecture.md", "exec"), namespace)
    tc = config_from_dict({"train": {"optimizer": "rmsprop", "optimizer_options": {"alpha": 0.9}}}).train
    opt = optimizers.build_optimizer([nn.Parameter(torch.zeros(3))], tc)
    assert isinstance(opt, torch.optim.RMSprop) and opt.defaults["alpha"] == 0.9
    with pytest.raises(UserError, match=r"'train.optimizer_options.alpha' must be in \[0, 1\)"):
        optimizers.optimizer_options(TrainConfig(optimizer="rmsprop", optimizer_options={"alpha": 1.5}))
    with pytest.raises(UserError, match="train.optimizer_options.momentum is a setting of optimizer 'sgd'"):
        optimizers.optimizer_options(TrainConfig(optimizer="rmsprop", optimizer_options={"momentum": 0.9}))


def test_a_registry_refuses_a_name_twice_and_names_the_known_ones():
    reg: Registry = Registry("widget", "x.widget")

    @dataclass(frozen=True)
    class Opts:
        size: int = 1

    reg.register("a", "b", options=Opts)(print)  # one target under two names
    reg.register("a", options=Opts)(print)  # the same again: a module imported twice
    with pytest.raises(ValueError, match="widget 'a' is registered twice"):
        reg.register("a", options=Opts)(len)
    with pytest.raises(UserError, match=r"unknown x.widget 'c'; known: a, b"):
        reg.get("c")
    with pytest.raises(UserError, match=r"unknown x.widget 'aa'; did you mean 'a'"):
        reg.get("aa")
    with pytest.raises(UserError) as info:
        reg.get("z" * 10_000_000)
    assert len(str(info.value)) < 150
    assert reg.parse_options("a", {"size": 3}, "x.options") == Opts(3)
    with pytest.raises(UserError, match=r"x.options.sise is not an option of widget 'a'; did you mean 'size'"):
        reg.parse_options("a", {"sise": 3}, "x.options")


def test_a_units_options_are_its_constructors_keywords():
    for name in cells.registered_names():
        options = unit_registry.UNITS.get(name).options
        assert dataclasses.is_dataclass(options)
        assert {"layer_norm", "dropout"} <= {f.name for f in dataclasses.fields(options)}
    assert {f.name for f in dataclasses.fields(unit_registry.UNITS.get("gru").options)} >= {"reset_bias"}
    assert issubclass(unit_registry.UNITS.get("gru").target, Cell)
