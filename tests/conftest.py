"""Shared fixtures (a small corpus cut from the bundled sample and a tiny trained run) and the
test tiers, which follow the folder a test lives in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Helpers live in tests/support.py; these names stay importable from here as well.
from tests.support import REPO, SAMPLE, TESTS, tiny_config_tree, write_corpus  # noqa: F401


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


@pytest.fixture(scope="session")
def finetune_corpus(tmp_path_factory):
    """(root, config tree) of a 40-pair corpus for the fine-tuning tests."""
    root = tmp_path_factory.mktemp("finetune")
    return root, tiny_config_tree(write_corpus(root, "train", 40), write_corpus(root, "dev", 4, offset=5000))


@pytest.fixture(scope="session")
def finetune_parent(finetune_corpus) -> Path:
    """A model trained long enough to be well off its initialisation (fine-tuning's parent)."""
    import rnmt

    root, tree = finetune_corpus
    rnmt.train(tree, ["train.max_steps=40", "train.lr=0.01", "train.warmup_steps=1", "train.validate_every=1000"],
               out=root / "parent", log=lambda *_: None)
    return root / "parent"


@pytest.fixture
def src_file(tmp_path) -> Path:
    """A source file of `GENESIS_LINES` (tests/support.py)."""
    from tests.support import GENESIS_LINES

    path = tmp_path / "in.es"
    path.write_text("\n".join(GENESIS_LINES) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def kernels_on():
    """The C++ kernels on (built if they can be) whatever the process's choice: for the tests
    that compare them with their fallbacks (`pytestmark = pytest.mark.usefixtures(...)`)."""
    from rnmt import kernels

    with kernels.use(True):
        yield


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu",
                     help="device of the tests marked on_device (cpu, cuda, cuda:N): "
                     "`pytest --device cuda -m on_device`")


@pytest.fixture(scope="session")
def device(request):
    """The torch device of `--device`. On a GPU, TF32 is turned off for the session: the tests
    compare algorithms (forward with step, padded with alone, resumed with uninterrupted), and
    TF32's 10-bit products would differ between batch shapes by more than their tolerances."""
    import torch

    name = request.config.getoption("--device")
    dev = torch.device(name)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise pytest.UsageError(f"--device {name}: no CUDA device here")
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    return dev


def pytest_configure(config):
    # Tests use tiny tensors: one thread is as fast and keeps the suite steady on a busy machine.
    import torch

    torch.set_num_threads(1)
    # The harness's one environment override, where no config reaches (docs/gpu.md): with
    # RNMT_KERNELS=0 the suite runs without building rnmt's CPU kernels (a GPU machine's
    # on-device tests). The package itself reads no such variable: a run's plan decides.
    if os.environ.get("RNMT_KERNELS", "").strip().lower() in ("0", "off", "false", "no"):
        from rnmt import kernels

        kernels.configure(False)


# Every test belongs to the tier of its folder (markers registered in pyproject.toml), so
# `pytest tests/unit` and `pytest -m unit` select the same tests:
#   tests/unit         one module or function in-process: no files written (no tmp_path, no
#                      corpus, no trained run), no training run, no other process;
#   tests/integration  several layers together in-process: tiny corpora, training runs,
#                      checkpoints, files;
#   tests/system       rnmt as a user runs it, in separate processes: the CLI, a server,
#                      torchrun, an installed wheel, a browser.
# A tier marker written on a test must agree with its folder. `make test` runs all three.
TIERS = ("unit", "integration", "system")
# What a unit test may not ask for: each writes files, and the last two train a model first.
UNIT_REFUSED_FIXTURES = ("tmp_path", "tmp_path_factory", "tmpdir", "tmpdir_factory", "tiny_corpus", "tiny_run")
# What a unit test may not start: a Python interpreter or rnmt's own commands. (Compilers
# that build the C++ kernels on first use are the library's business, not the test's.)
UNIT_REFUSED_PROGRAMS = ("python", "rnmt", "torchrun", "sacrebleu", "pip", "uvicorn", "chromium")


def tier_of(path: Path) -> str:
    try:
        folder = Path(path).resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        folder = ""
    if folder not in TIERS:
        raise pytest.UsageError(f"{path}: a test module belongs in tests/unit, tests/integration or tests/system "
                                "(docs/architecture.md, Tests)")
    return folder


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(item.path)
        marked = [t for t in TIERS if item.get_closest_marker(t)]
        if marked and marked != [tier]:
            raise pytest.UsageError(f"{item.nodeid}: marked {', '.join(marked)} but lives in tests/{tier}")
        item.add_marker(tier)


def pytest_runtest_setup(item):
    if tier_of(item.path) != "unit":
        return
    refused = [name for name in UNIT_REFUSED_FIXTURES if name in getattr(item, "fixturenames", ())]
    if refused:
        pytest.fail(f"a unit test may not use {', '.join(refused)}: it belongs in tests/integration", pytrace=False)


def _refused_program(args) -> bool:
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    if not argv:
        return False
    program = os.fsdecode(argv[0])
    if isinstance(args, str) and " " in program:  # a shell command line
        program = program.split()[0]
    name = os.path.basename(program)
    return program == sys.executable or any(name.startswith(refused) for refused in UNIT_REFUSED_PROGRAMS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """In a unit test, starting Python or rnmt in another process fails the test."""
    if tier_of(item.path) != "unit":
        yield
        return
    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        if _refused_program(args):
            pytest.fail(f"a unit test may not start {args!r}: it belongs in tests/system", pytrace=False)
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = guarded
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original
