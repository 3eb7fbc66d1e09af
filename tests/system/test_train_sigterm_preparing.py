"""SIGTERM to `rnmt train` while it prepares a large corpus (training the vocabulary, encoding
the corpus), before its first update: the command stops within seconds with one line and
exit 143, leaves no temporaries for a rerun to find, and the same command then trains."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support import REPO

PAIRS = 120_000  # about 11 MB a side: some 10 s of preparation on a shared 2-core machine
SECONDS_TO_STOP = 10  # from the signal to the exit; it takes 0.1-2 s here (the bound leaves room for load)
MESSAGE = ("error: stopped by SIGTERM while preparing the run (before its first update): nothing was trained; "
           "run the same command again")


@pytest.fixture(scope="module")
def large_config(tmp_path_factory) -> Path:
    """A config over a generated corpus of `PAIRS` pairs (made-up words), kernels off (no build)."""
    root = tmp_path_factory.mktemp("large")
    rng = random.Random(0)
    syllables = "ka lo mi ne ru sa te vo zi po da fe gu hi ja".split()
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(4000)]
    with open(root / "train.es", "w", encoding="utf-8") as src, open(root / "train.en", "w", encoding="utf-8") as tgt:
        for _ in range(PAIRS):
            sentence = [rng.choice(words) for _ in range(rng.randint(5, 25))]
            src.write(" ".join(sentence) + "\n")
            tgt.write(" ".join(reversed(sentence)) + "\n")
    config = root / "large.yaml"
    config.write_text(yaml.safe_dump({
        "data": {"train": str(root / "train"), "src": "es", "tgt": "en", "batch_tokens": 600, "max_len": 80,
                 "vocab": {"size": 500}},
        "model": {"emb_size": 16, "hidden_size": 24},
        "train": {"max_steps": 1, "log_every": 1, "threads": 1, "progress": False, "patience": None},
        "runtime": {"kernels": False},
    }))
    return config


def _train(config: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out)],
                            stderr=subprocess.PIPE, text=True, cwd=REPO)


def _wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 300  # start-up is slow on a loaded machine
    while not condition():
        assert proc.poll() is None, f"rnmt train ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what} within 300 s"
        time.sleep(0.02)


def _encoding_started(out: Path) -> bool:
    # encode_corpus builds its entry in cache/.<key>.<random>/ and renames it when complete
    return (out / "cache").is_dir() and any(p.name.startswith(".") for p in (out / "cache").iterdir())


@pytest.mark.parametrize("phase", ["vocabulary", "encoding"])
def test_sigterm_while_preparing_stops_within_seconds_and_a_rerun_trains(large_config, tmp_path, phase):
    out = tmp_path / "run"
    proc = _train(large_config, out)
    if phase == "vocabulary":  # sentencepiece trains in C++ for several seconds after this line
        first = proc.stderr.readline()
        assert first.startswith("training the sentencepiece vocabulary"), first
        time.sleep(0.5)
        assert not (out / "spm.model").exists()  # still training it
    else:
        first = ""
        _wait_for(lambda: _encoding_started(out), proc, "corpus encoding")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    err = first + proc.communicate(timeout=120)[1]
    took = time.monotonic() - sent
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert took < SECONDS_TO_STOP, f"{took:.1f} s from SIGTERM to the exit"
    lines = err.strip().splitlines()
    assert lines[-1] == MESSAGE and "Traceback" not in err and "terminate called" not in err, err
    assert not any(line.startswith("training pairs:") for line in lines), "the signal came after the preparation"
    # Nothing a rerun would trust or trip over: no state, no checkpoint, no temporaries, no
    # partial cache entry (a complete entry or vocabulary is content-checked and reused).
    left = [p.relative_to(out).as_posix() for p in out.rglob("*")]
    assert not [p for p in left if p.endswith(".tmp") or "/." in f"/{p}" and p != ".train.lock"], left
    assert not [p for p in left if p == "train_state.pt" or p.endswith(".safetensors")], left
    if phase == "encoding":
        assert (out / "spm.model").is_file() and not any((out / "cache").iterdir()), left
    # The same command again trains (the run lock of the stopped process does not hold it back).
    rerun = subprocess.run([sys.executable, "-m", "rnmt", "train", str(large_config), "--out", str(out)],
                           capture_output=True, text=True, cwd=REPO, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "train_state.pt").is_file() and "training finished" in rerun.stderr
