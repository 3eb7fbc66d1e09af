"""Mixed precision: train.amp resolution and a bf16-autocast training run on CPU."""

import json
import math

import pytest
import torch

from conftest import tiny_config_tree
from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.train.trainer import Trainer, amp_dtype


def test_amp_resolution_on_cpu():
    cpu = torch.device("cpu")
    assert amp_dtype("auto", cpu) is None  # fp32 on CPU unless asked
    assert amp_dtype("none", cpu) is None
    assert amp_dtype("bf16", cpu) is torch.bfloat16
    with pytest.raises(UserError, match="train.amp"):
        amp_dtype("fp8", cpu)


def test_bf16_autocast_trains_on_cpu(tmp_path, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], None)
    tree["train"].update(max_steps=3, amp="bf16")
    out = tmp_path / "bf16"
    trainer = Trainer(config_from_dict(tree), out, log=lambda *_: None)
    assert trainer.amp_dtype is torch.bfloat16
    trainer.run()
    losses = [json.loads(line)["loss"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    # the weights stay fp32: autocast changes the compute dtype only
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
