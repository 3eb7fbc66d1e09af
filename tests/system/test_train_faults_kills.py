"""Training under faults as a process: SIGTERM to `rnmt train`, and kills at random moments
(benchmarks/faults.py)."""

from __future__ import annotations

import signal
import sys

from rnmt.models import load_model
from rnmt.training.checkpoint import load_train_state
from tests.support import REPO, load_benchmark, tiny_config_tree


def no_dev_tree(tiny_corpus, steps=6, **train):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    del tree["data"]["dev"]
    tree["train"].update(max_steps=steps, **train)
    return tree


def start_long_training(tmp_path, tiny_corpus, logged: int):
    """`rnmt train` of a run too long to finish, in its own process, returned once its log
    has ``logged`` lines: (process, config file, output directory)."""
    import subprocess
    import time

    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 100000, save_every=1000, log_every=1)))
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out)],
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 300  # start-up (import, kernels) is slow on a loaded machine
    while not ((out / "log.jsonl").exists() and len((out / "log.jsonl").read_text().splitlines()) >= logged):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    return proc, config, out


def test_sigterm_to_the_command_exits_143_with_a_checkpoint(tmp_path, tiny_corpus):
    proc, _, out = start_long_training(tmp_path, tiny_corpus, logged=3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "stopped by SIGTERM" in err
    step = load_train_state(out / "train_state.pt")["step"]
    assert step >= 3 and (out / f"ckpt-{step}.safetensors").is_file()
    assert load_model(out).meta["step"] == step  # no dev set: the directory loads the newest


def test_a_second_trainer_is_refused_while_the_first_trains_and_resumes_after_it(tmp_path, tiny_corpus):
    import subprocess

    first, config, out = start_long_training(tmp_path, tiny_corpus, logged=2)
    # the same run started again (a restart while the earlier process still trains)
    second = subprocess.run([sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out), "--resume"],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert second.stderr.strip().splitlines()[-1] == (
        f"error: {out}: another process (pid {first.pid}) is training in this directory; wait for it, stop it "
        f"(SIGTERM saves a checkpoint and exits) or choose another --out")
    assert first.poll() is None  # the first trains on, undisturbed
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=60)
    step = load_train_state(out / "train_state.pt")["step"]
    # the lock ends with its process: the run resumes
    third = subprocess.run([sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out), "--resume",
                            "--set", f"train.max_steps={step + 2}"], capture_output=True, text=True, cwd=REPO,
                           timeout=300)
    assert third.returncode == 0, third.stderr
    assert load_train_state(out / "train_state.pt")["step"] == step + 2


# -- fault injection (the 20-kill variant is benchmarks/faults.py) ------------------------

def test_three_kills_at_random_moments_lose_nothing(tmp_path):
    faults = load_benchmark("faults")
    # Enough steps that a fast machine cannot finish a segment before its kill lands.
    result = faults.run_faults(tmp_path, kills=3, steps=200, seed=3, max_delay=0.5, timeout=600)
    assert result["missing_steps"] == []
    assert result["max_loss_diff"] < 1e-6 and result["max_weight_diff"] < 1e-6
    assert result["tmp_files_left"] == []
    assert result["SIGKILL"] + result["SIGTERM"] == 3 and result["during_write"] >= 1
