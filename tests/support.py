"""Helpers shared by the test modules of every tier (fixtures live in conftest.py): the
repository's paths, the tiny corpus and config, the kernel switch, benchmark loading.

Import them as ``from tests.support import ...``: the tier folders hold no package of their
own, and the repository root is on pytest's path (pyproject.toml)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

# torch.utils.cpp_extension compiles with $CXX, else c++. Without one the kernels cannot
# exist and their tests skip; with one, a failed build is a failure.
HAVE_COMPILER = shutil.which(os.environ.get("CXX", "c++")) is not None

needs_kernel = pytest.mark.skipif(not HAVE_COMPILER, reason="no C++ compiler here: the kernels cannot be built")

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SAMPLE = REPO / "data" / "sample"  # the bundled corpus
COMPAT = TESTS / "data" / "compat"  # stored checkpoints of earlier formats
BENCHMARKS = REPO / "benchmarks"


def write_corpus(directory: Path, name: str, n: int, offset: int = 0) -> str:
    """Copy ``n`` pairs of the bundled sample into ``directory/name.{es,en}``; returns the prefix."""
    directory.mkdir(parents=True, exist_ok=True)
    for lang in ("es", "en"):
        lines = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()[offset:offset + n]
        (directory / f"{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(directory / name)


def tiny_config_tree(train: str, dev: str) -> dict:
    return {
        "data": {"train": train, "dev": dev, "src": "es", "tgt": "en", "batch_tokens": 600,
                 "max_len": 60, "vocab": {"size": 300}},
        "model": {"emb_size": 16, "hidden_size": 24, "dropout": 0.1},
        "train": {"max_steps": 6, "log_every": 1, "validate_every": 3, "lr": 0.003, "warmup_steps": 2,
                  "threads": 1, "progress": False, "patience": None},
        "search": {"beam": 2, "max_len_ratio": 1.0, "max_len_offset": 2},
    }


def assert_resume_is_exact(tree: dict, out: Path, steps: int, stop_at: int, log=lambda *_: None) -> None:
    """Train ``tree`` for ``steps`` updates in one go (``log`` gets its lines), and again stopped
    at ``stop_at`` and resumed; both runs' checkpoints at ``steps`` hold the same weights, to
    test_train's tolerance (CUDA's backward sums are not run-to-run deterministic)."""
    import torch

    import rnmt
    from rnmt.models import load_model

    rnmt.train(tree, [f"train.max_steps={steps}"], out=out / "full", log=log)
    rnmt.train(tree, [f"train.max_steps={stop_at}"], out=out / "part", log=lambda *_: None)
    rnmt.train(tree, [f"train.max_steps={steps}"], out=out / "part", resume=True, log=lambda *_: None)
    full = load_model(out / "full" / f"ckpt-{steps}.safetensors").model.state_dict()
    part = load_model(out / "part" / f"ckpt-{steps}.safetensors").model.state_dict()
    assert full.keys() == part.keys()
    for k in full:
        torch.testing.assert_close(part[k], full[k], rtol=1e-5, atol=1e-5, msg=k)


def load_benchmark(name: str) -> ModuleType:
    """The benchmark module ``benchmarks.<name>`` (``studies.x`` for a study), imported as
    ``python -m benchmarks.<name>`` runs it from the repository root."""
    return importlib.import_module(f"benchmarks.{name}")


def load_results_script(name: str) -> ModuleType:
    """The script ``results/<name>.py`` (results/ is no package), loaded as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "results" / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_rnmt(*args, stdin=None) -> subprocess.CompletedProcess:
    """``python -m rnmt ARGS`` in a separate process, from the repository root."""
    return subprocess.run([sys.executable, "-m", "rnmt", *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def assert_one_line_error(result, *needles) -> None:
    """The command failed as a user error: exit code 2 and one ``error:`` line, no traceback."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and result.stderr.strip().endswith(errors[0]), result.stderr
    for needle in needles:
        assert needle in errors[0]


def assert_one_line(err: str, *needles: str) -> None:
    """Captured stderr of an in-process command: one ``error:`` line holding every needle."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], err


def tiny_reproduction_corpus(root: Path, name: str = "tiny-es-en", test: bool = True) -> Path:
    """A corpus directory of the sample's shortest verses (120 train, 8 dev, 10 test pairs):
    fast to train on and to decode, for `rnmt reproduce` tests."""
    directory = root / name
    directory.mkdir(parents=True)
    splits = {"train": 120, "dev": 8}
    if test:
        splits["test"] = 10
    for split, n in splits.items():
        src = (SAMPLE / f"{split}.es").read_text(encoding="utf-8").splitlines()
        tgt = (SAMPLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
        pairs = sorted(zip(src, tgt), key=lambda p: len(p[0].split()))[:n]
        for lang, lines in (("es", [p[0] for p in pairs]), ("en", [p[1] for p in pairs])):
            (directory / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def tiny_reproduction_settings(**changes):
    """`rnmt.reproduce` settings for a reproduction of a few updates at toy sizes."""
    from rnmt.reproduce import Settings

    values = dict(updates=3, emb_size=8, hidden_size=16, vocab_size=120, dev_sentences=4,
                  validate_every=2, log_every=1, seeds=[1, 2], threads=1, device="cpu", bootstrap=20)
    values.update(changes)
    return Settings(**values)


class MessageLog(list):
    """A log callback that keeps its messages."""

    def __call__(self, msg: str) -> None:
        self.append(msg)


# Five source lines for the translate command's tests, a blank one among them.
GENESIS_LINES = ["Y dijo Dios: Sea la luz.", "", "Y vio Dios que la luz era buena.", "Y llamó Dios á la luz Día",
                 "y á las tinieblas llamó Noche."]


def translate(*args) -> int:
    """``rnmt translate ARGS`` through `rnmt.cli.main` in this process; its exit code."""
    from rnmt.cli import main

    return main(["translate", *map(str, args)])
