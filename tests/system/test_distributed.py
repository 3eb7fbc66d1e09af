"""Data-parallel training: 2 gloo processes under torchrun equal 1 process accumulating 2 batches.

Rank r takes batches r, r + 2, ...; one process with accumulate=2 takes batches 0, 1 per
update: the same batches per update, and the loss of each is normalised by the update's
target tokens over both ranks, so the weights agree up to floating-point reordering.
Dropout is 0 (random masks differ between processes).
"""

import json
import os
import subprocess
import sys

import pytest
import torch
import yaml

from rnmt.config import config_from_dict
from rnmt.models import load_model
from rnmt.training.trainer import Trainer
from tests.support import REPO, tiny_config_tree

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing")


def torchrun(nproc, *args, timeout=240):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "-m", "rnmt", "train", *map(str, args)]
    result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def records(out):
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def weights(path):
    return load_model(path).model.state_dict()


def assert_same_weights(a, b, atol=1e-5):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.allclose(wa[k], wb[k], atol=atol, rtol=0), (k, (wa[k] - wb[k]).abs().max())


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory, tiny_corpus):
    root = tmp_path_factory.mktemp("ddp")
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"]["dropout"] = 0.0
    tree["data"]["cache_dir"] = str(root / "cache")
    tree["train"].update(max_steps=4, validate_every=2, schedule="rnmt_plus", warmup_steps=2,
                         decay_start=4, decay_end=40)
    cfg_file = root / "tiny.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))

    two = root / "two"
    torchrun(2, cfg_file, "--out", two, "--set", "train.max_steps=4")

    one = root / "one"
    Trainer(config_from_dict(tree, ["train.accumulate=2", "train.replicas=2"]), one, log=lambda *_: None).run()
    return {"tree": tree, "cfg": cfg_file, "one": one, "two": two}


def test_two_processes_equal_one_process_accumulating_two_batches(ddp_runs):
    one, two = ddp_runs["one"], ddp_runs["two"]
    assert_same_weights(one / "ckpt-4.safetensors", two / "ckpt-4.safetensors")
    loss_one = {r["step"]: r["loss"] for r in records(one) if "loss" in r}
    loss_two = {r["step"]: r["loss"] for r in records(two) if "loss" in r}
    assert sorted(loss_one) == sorted(loss_two) == [1, 2, 3, 4]
    for step in loss_one:
        assert loss_one[step] == pytest.approx(loss_two[step], rel=1e-5)


def test_rank_zero_validates_once_and_writes_the_checkpoints(ddp_runs):
    two = ddp_runs["two"]
    valid = [r["step"] for r in records(two) if "dev_bleu" in r]
    assert valid == [2, 4]  # once per validation, not once per process
    names = {p.name for p in two.iterdir()}
    assert {"best.safetensors", "ckpt-2.safetensors", "ckpt-4.safetensors", "train_state.pt"} <= names
    assert not any(n.endswith(".tmp") for n in names)
    state = torch.load(two / "train_state.pt", weights_only=True)
    assert state["world_size"] == 2 and len(state["rank_rng"]) == 2
    assert state["sampler"]["position"] == 4 and state["sampler"]["world_size"] == 2


def test_rnmt_plus_replicas_default_to_the_number_of_processes(ddp_runs):
    saved = yaml.safe_load((ddp_runs["two"] / "config.yaml").read_text())
    assert saved["train"]["replicas"] == 2
    lrs = {r["step"]: r["lr"] for r in records(ddp_runs["two"]) if "lr" in r}
    assert lrs[1] == pytest.approx(0.003)  # n = 2: eq. 17 starts at lr0, warms up towards n lr0
    assert lrs[3] == pytest.approx(0.0045)  # t = 2: 1 + t (n - 1) / (n p) = 1.5


def test_resume_with_another_number_of_processes(ddp_runs):
    """Two processes for 4 steps, then one process accumulating 2 batches up to step 6,
    equals one process accumulating 2 batches for 6 steps."""
    tree, one, two = ddp_runs["tree"], ddp_runs["one"], ddp_runs["two"]
    Trainer(config_from_dict(tree, ["train.accumulate=2", "train.replicas=2", "train.max_steps=6"]), one,
            resume=True, log=lambda *_: None).run()
    saved = yaml.safe_load((two / "config.yaml").read_text())
    resumed = Trainer(config_from_dict(saved, ["train.accumulate=2", "train.max_steps=6"]), two, resume=True,
                      log=lambda *_: None)
    assert (resumed.sampler.epoch, resumed.sampler.position) == (0, 8)
    resumed.run()
    assert_same_weights(one / "ckpt-6.safetensors", two / "ckpt-6.safetensors")


def test_two_processes_average_the_weights_as_one_process_does(ddp_runs, tmp_path):
    """train.ema_decay under torchrun: rank 0's checkpoints hold the same average as one
    process accumulating the same batches, and it is not the last weights."""
    averaged = "train.ema_decay=0.5"
    two = tmp_path / "two-averaged"
    torchrun(2, ddp_runs["cfg"], "--out", two, "--set", averaged)
    one = tmp_path / "one-averaged"
    Trainer(config_from_dict(ddp_runs["tree"], ["train.accumulate=2", "train.replicas=2", averaged]), one,
            log=lambda *_: None).run()
    assert_same_weights(one / "ckpt-4.safetensors", two / "ckpt-4.safetensors")
    plain, average = weights(ddp_runs["two"] / "ckpt-4.safetensors"), weights(two / "ckpt-4.safetensors")
    assert any(not torch.allclose(plain[k], average[k]) for k in plain)
