"""The worked example of docs/architecture.md ("Adding an architecture") runs as written:
its one file registers an architecture with its own options, its config builds it, and it
trains and decodes like the others."""

from __future__ import annotations

import re
import sys
import types

import pytest
import torch
import yaml

from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.search.beam import beam_search
from tests.support import REPO

DOC = REPO / "docs" / "architecture.md"


def _example(language: str, needle: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return next(b for b in blocks if needle in b)


@pytest.fixture(scope="module")
def registered():
    """The documented file, imported as a module of its own (as rnmt/models/ would), and
    unregistered afterwards: a test that lists every architecture (the export's) must not
    meet it."""
    from rnmt.models.registry import ARCHITECTURES

    ARCHITECTURES.names()  # the package's own architectures registered before the snapshot
    before = dict(ARCHITECTURES._entries)
    module = types.ModuleType("pooled_context_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(_example("python", "class PooledContext"), str(DOC), "exec", dont_inherit=True), module.__dict__)
        yield module
    finally:
        del sys.modules[module.__name__]
        ARCHITECTURES._entries.clear()
        ARCHITECTURES._entries.update(before)


def _documented_config(*overrides: str):
    return config_from_dict(yaml.safe_load(_example("yaml", "arch: pooled-context")), overrides)


def test_the_documented_config_reaches_the_options(registered):
    cfg = _documented_config("model.emb_size=8", "model.hidden_size=12")
    assert build_model(cfg.model, 20, 20).pooling == "max"
    assert build_model(_documented_config("model.options={}").model, 20, 20).pooling == "mean"
    with pytest.raises(UserError, match=r"model.options.pooling of arch 'pooled-context' must be one of mean, max, "
                                        r"got 'min'"):
        build_model(_documented_config("model.options.pooling=min").model, 20, 20)


@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_the_documented_architecture_file_builds_trains_and_decodes(registered, pooling):
    cfg = _documented_config("model.emb_size=8", "model.hidden_size=12", f"model.options.pooling={pooling}")
    torch.manual_seed(0)
    model = build_model(cfg.model, 20, 20)
    uniform_init_(model, 0.3)
    src = torch.tensor([[4, 5, 6, 3], [7, 8, 3, 0]])
    mask = src != 0
    tgt_in = torch.tensor([[2, 9, 10], [2, 11, 0]])
    model.eval()
    with torch.no_grad():
        teacher = torch.log_softmax(model(src, mask, tgt_in), -1)
        memory = model.encode(src, mask)
        state = model.init_state(memory)
        for j in range(tgt_in.size(1)):
            log_probs, state, _ = model.step(tgt_in[:, j], state, memory)
            torch.testing.assert_close(log_probs, teacher[:, j], rtol=1e-5, atol=1e-6)
        hyps = beam_search(model, src, mask, torch.tensor([6, 6]), beam=3)
    assert len(hyps) == 2
    model.train()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(2):
        optimiser.zero_grad()
        logits = model(src, mask, tgt_in)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 20), torch.tensor([9, 10, 3, 11, 3, 0]),
                                                 ignore_index=0)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert losses[1] < losses[0]


def test_the_documented_plain_layers_get_the_fast_variants_once_built(registered):
    """The example writes ``nn.Linear`` and builds its units by name; `build_model` swaps the
    fast variants in (rnmt/fast/), so the example trains on the same paths as the shipped
    architectures; `build_model(..., accelerated=False)` leaves it as written."""
    from rnmt import products
    from rnmt.fast.cells import FastCell

    cfg = _documented_config("model.emb_size=8", "model.hidden_size=12")
    model = build_model(cfg.model, 20, 20)
    assert type(model.init_layer) is products.Linear
    assert isinstance(model.unit1, FastCell) and isinstance(model.encoder.fwd, FastCell)
    written = build_model(cfg.model, 20, 20, accelerated=False)
    assert type(written.init_layer) is torch.nn.Linear and not isinstance(written.unit1, FastCell)
