"""Mixed precision: bf16-autocast training runs on CPU, and a resumed run keeps its precision."""

import json
import math

import torch

from rnmt.config import config_from_dict
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree


def test_a_resumed_run_keeps_the_precision_it_started_with(tmp_path, tiny_corpus, monkeypatch):
    """auto follows the CPU's features; a run resumed on a machine whose features differ
    (here: a CPU that lost its bf16 products) keeps the recorded precision."""
    from rnmt import hardware

    bf16_cpu = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx512f", "avx512_bf16"}))
    monkeypatch.setattr(hardware, "BF16_MIN_HIDDEN", 0)
    monkeypatch.setattr(hardware, "this_cpu", lambda: bf16_cpu)
    tree = tiny_config_tree(tiny_corpus["train"], None)
    tree["train"].update(max_steps=2, amp="auto")
    out = tmp_path / "auto"
    first = Trainer(config_from_dict(tree), out, log=lambda *_: None)
    assert first.amp_dtype is torch.bfloat16
    first.run()
    monkeypatch.setattr(hardware, "this_cpu", lambda: hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2"})))
    tree["train"]["max_steps"] = 3
    lines = []
    resumed = Trainer(config_from_dict(tree), out, resume=True, log=lines.append)
    assert resumed.amp_dtype is torch.bfloat16
    assert any("precision: bf16 (recorded when the run started" in str(line) for line in lines)
    assert resumed.run()["steps"] == 3


def test_bf16_autocast_trains_on_cpu(tmp_path, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], None)
    tree["train"].update(max_steps=3, amp="bf16")
    out = tmp_path / "bf16"
    trainer = Trainer(config_from_dict(tree), out, log=lambda *_: None)
    assert trainer.amp_dtype is torch.bfloat16
    trainer.run()
    losses = [json.loads(line)["loss"] for line in (out / "log.jsonl").read_text().splitlines() if '"loss"' in line]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    # the weights stay fp32: autocast changes the compute dtype only
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
