"""Distributed training under faults: a rank that dies, two nodes simulated on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
import torch
import yaml

from rnmt.config import config_from_dict
from rnmt.models import load_model
from rnmt.training.checkpoint import load_train_state
from rnmt.training.trainer import Trainer
from tests.support import REPO, tiny_config_tree

pytestmark = [pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))


def config(root, tiny_corpus, **train):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    del tree["data"]["dev"]
    tree["model"]["dropout"] = 0.0
    tree["data"]["cache_dir"] = str(root / "cache")
    tree["train"].update(device="cpu", **train)
    path = root / "c.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path, tree


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def steps_logged(out):
    """Updates logged so far (the run's plan record at its start is not one)."""
    path = out / "log.jsonl"
    return sum('"loss"' in line for line in path.read_text().splitlines()) if path.exists() else 0


def rank_pids(parent: int, rank: int):
    """Worker processes under a torchrun agent whose environment says RANK=rank."""
    found = []
    for child in subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout.split():
        try:
            env = open(f"/proc/{child}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in env:
            found.append(int(child))
    return found


def test_when_a_rank_dies_rank_zero_saves_and_everyone_exits(tmp_path, tiny_corpus):
    cfg, tree = config(tmp_path, tiny_corpus, max_steps=100000, save_every=1000, log_every=1)
    out = tmp_path / "run"
    agent = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                              "-m", "rnmt", "train", str(cfg), "--out", str(out)],
                             cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 180
        while steps_logged(out) < 3:
            assert agent.poll() is None and time.monotonic() < deadline, "training did not start"
            time.sleep(0.1)
        victims = rank_pids(agent.pid, 1)
        assert victims
        os.kill(victims[0], 9)
        output, _ = agent.communicate(timeout=120)  # no hang: the survivors notice and exit
    finally:
        if agent.poll() is None:
            agent.kill()
    assert agent.returncode != 0
    assert "lost contact with the other processes" in output
    state = load_train_state(out / "train_state.pt")
    assert state["step"] >= 3 and (out / state["checkpoint"]).is_file()
    assert load_model(out).meta["step"] == state["step"]
    # The saved state resumes on one process.
    step = state["step"]
    resumed = Trainer(config_from_dict(tree, [f"train.max_steps={step + 2}"]), out, resume=True,
                      log=lambda *_: None)
    assert resumed.step == step
    resumed.run()
    assert load_train_state(out / "train_state.pt")["step"] == step + 2


def test_two_nodes_on_loopback_train_save_once_and_resume_on_one_process(tmp_path, tiny_corpus):
    cfg, tree = config(tmp_path, tiny_corpus, max_steps=4, save_every=2)
    out = tmp_path / "run"
    port = free_port()
    agents = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
                                "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=rnmt-test",
                                "--master-addr=127.0.0.1", "--local-addr=127.0.0.1",
                                "-m", "rnmt", "train", str(cfg), "--out", str(out)],
                               cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
              for _ in range(2)]
    try:
        outputs = [a.communicate(timeout=240)[0] for a in agents]
    finally:
        for a in agents:
            if a.poll() is None:
                a.kill()
    assert [a.returncode for a in agents] == [0, 0], "\n".join(o[-2000:] for o in outputs)
    assert sum("data parallel: 2 processes" in o for o in outputs) == 1  # rank 0 alone logs
    state = load_train_state(out / "train_state.pt")
    assert state["step"] == 4 and state["world_size"] == 2
    assert {p.name for p in out.glob("ckpt-*")} == {"ckpt-2.safetensors", "ckpt-4.safetensors"}
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "loss" in r] == [1, 2, 3, 4]  # one writer
    resumed = Trainer(config_from_dict(tree, ["train.max_steps=6", "train.accumulate=2"]), out, resume=True,
                      log=lambda *_: None)
    assert resumed.step == 4
    resumed.run()
    assert load_train_state(out / "train_state.pt")["step"] == 6


def test_a_second_run_in_a_held_directory_exits_without_writing_or_hanging(tmp_path, tiny_corpus):
    """A torchrun job started in a directory another trainer holds (here this process): rank 0
    refuses with the one-line error, the agent stops the other rank, nothing is written."""
    from rnmt.training import run_lock

    cfg, _ = config(tmp_path, tiny_corpus, max_steps=4)
    out = tmp_path / "run"
    out.mkdir()
    lock = run_lock.hold(out)
    try:
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                               "-m", "rnmt", "train", str(cfg), "--out", str(out)],
                              cwd=REPO, env=ENV, capture_output=True, text=True, timeout=180)
    finally:
        lock.release()
    output = done.stdout + done.stderr
    assert done.returncode != 0
    message = f"another process (pid {os.getpid()}) is training in this directory"
    assert f"error: {out}: {message}" in output  # rank 0
    assert f"error: rank 0 failed: {out}: {message}" in output  # rank 1, told instead of left waiting
    assert "[rank1]: Traceback" not in output and "[rank0]: Traceback" not in output
    assert [p.name for p in out.iterdir()] == [run_lock.LOCK_FILE]
