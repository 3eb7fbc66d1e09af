"""Training under faults as a process: SIGTERM to `rnmt train`, and kills at random moments
(benchmarks/faults.py)."""

from __future__ import annotations

import importlib.util
import signal
import sys

from rnmt.models import load_model
from rnmt.training.checkpoint import load_train_state
from tests.support import REPO, tiny_config_tree


def no_dev_tree(tiny_corpus, steps=6, **train):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    del tree["data"]["dev"]
    tree["train"].update(max_steps=steps, **train)
    return tree


def test_sigterm_to_the_command_exits_143_with_a_checkpoint(tmp_path, tiny_corpus):
    import subprocess
    import time

    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 100000, save_every=1000, log_every=1)))
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out)],
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 300  # start-up (import, kernels) is slow on a loaded machine
    while not ((out / "log.jsonl").exists() and len((out / "log.jsonl").read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "stopped by SIGTERM" in err
    step = load_train_state(out / "train_state.pt")["step"]
    assert step >= 3 and (out / f"ckpt-{step}.safetensors").is_file()
    assert load_model(out).meta["step"] == step  # no dev set: the directory loads the newest


# -- fault injection (the 20-kill variant is benchmarks/faults.py) ------------------------

def test_three_kills_at_random_moments_lose_nothing(tmp_path):
    spec = importlib.util.spec_from_file_location("faults", REPO / "benchmarks" / "faults.py")
    faults = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(faults)
    # Enough steps that a fast machine cannot finish a segment before its kill lands.
    result = faults.run_faults(tmp_path, kills=3, steps=200, seed=3, max_delay=0.5, timeout=600)
    assert result["missing_steps"] == []
    assert result["max_loss_diff"] < 1e-6 and result["max_weight_diff"] < 1e-6
    assert result["tmp_files_left"] == []
    assert result["SIGKILL"] + result["SIGTERM"] == 3 and result["during_write"] >= 1
