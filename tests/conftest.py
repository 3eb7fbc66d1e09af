"""Shared fixtures: a small corpus cut from the bundled sample and a tiny trained run."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


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


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("corpus")
    return {"train": write_corpus(root, "train", 240), "dev": write_corpus(root, "dev", 12, offset=5000),
            "root": root}


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_corpus) -> Path:
    """A model trained for a few steps: enough to exercise translate, load and resume."""
    from rnmt.config import config_from_dict
    from rnmt.training.trainer import Trainer

    out = tmp_path_factory.mktemp("run")
    cfg = config_from_dict(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"]))
    Trainer(cfg, out, log=lambda *_: None).run()
    return out


def pytest_configure(config):
    # Tests use tiny tensors: one thread is as fast and keeps the suite steady on a busy machine.
    import torch

    torch.set_num_threads(1)


# Every test belongs to one tier, selectable with -m (markers registered in pyproject.toml):
#   unit         one module or function in-process, no corpus, no trained model;
#   integration  several layers together in-process: tiny corpora, training runs, checkpoints;
#   system       rnmt as a user runs it: separate processes (the CLI, a server, torchrun,
#                a browser).
# A test marked with a tier keeps it; otherwise a test that uses the tiny corpus (directly or
# through a trained run) is integration and any other is unit. `make test` runs all three.
TIERS = ("unit", "integration", "system")


def pytest_collection_modifyitems(config, items):
    for item in items:
        marked = [t for t in TIERS if item.get_closest_marker(t)]
        if len(marked) > 1:
            raise pytest.UsageError(f"{item.nodeid}: more than one tier marker ({', '.join(marked)})")
        if not marked:
            item.add_marker("integration" if "tiny_corpus" in getattr(item, "fixturenames", ()) else "unit")
