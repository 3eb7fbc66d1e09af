"""The worked example of docs/architecture.md ("Adding a recurrent architecture") runs as
written: its one file registers an architecture that trains and decodes like the others."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.search.beam import beam_search

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _example_source() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return next(b for b in blocks if "class MeanContext" in b)


def test_the_documented_architecture_file_builds_trains_and_decodes():
    exec(compile(_example_source(), str(DOC), "exec"), {"__name__": "mean_context_example"})
    torch.manual_seed(0)
    model = build_model(ModelConfig(arch="mean-context", cell="gru", emb_size=8, hidden_size=12), 20, 20)
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
