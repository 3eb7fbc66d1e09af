"""The package as a user gets it: build the sdist, build the wheel from it, install the
wheel into a new virtual environment and use rnmt there, away from the checkout.

The environment gets its dependencies (torch, sentencepiece, ...) from the one running the
tests, through a directory of links that leaves out rnmt itself, so the only rnmt it can
import is the installed wheel and the test needs no network. The C++ kernels' build is kept
between runs in the pytest cache (its name carries the sources' contents, so a changed
source gets a fresh build); the environment itself is made anew every run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.support import REPO, write_corpus

KERNEL_SOURCES = sorted(p.name for p in (REPO / "rnmt" / "kernels").iterdir() if p.suffix in (".cpp", ".h"))
CONFIGS = sorted(p.relative_to(REPO / "configs").as_posix() for p in (REPO / "configs").rglob("*.yaml"))


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{cmd}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """The sdist, built with setuptools' own build hook, and the wheel built from it."""
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
          "build_meta.build_sdist(sys.argv[1])", dist], cwd=REPO)
    (sdist,) = dist.glob("rnmt-*.tar.gz")
    # From the sdist, as pip does for a source install: a file the sdist lacks is then
    # missing from the wheel too, and no stale build/ directory of the checkout leaks in.
    _run([sys.executable, "-m", "pip", "wheel", sdist, "--no-deps", "--no-build-isolation", "--no-index",
          "-w", dist, "-q"])
    (wheel,) = dist.glob("rnmt-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_wheel_and_sdist_carry_kernels_and_configs(built):
    wheel = set(zipfile.ZipFile(built["wheel"]).namelist())
    for name in KERNEL_SOURCES:
        assert f"rnmt/kernels/{name}" in wheel
    for rel in CONFIGS:
        assert f"rnmt/configs/{rel}" in wheel
    assert not any(n.startswith(("tests/", "benchmarks/", "data/")) for n in wheel)
    with tarfile.open(built["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {f"rnmt/kernels/{n}" for n in KERNEL_SOURCES} <= names
    assert {f"configs/{rel}" for rel in CONFIGS} <= names
    metadata = zipfile.ZipFile(built["wheel"]).read("rnmt-{}.dist-info/METADATA".format(
        built["wheel"].name.split("-")[1])).decode()
    import rnmt

    assert f"Version: {rnmt.__version__}" in metadata
    assert "Classifier: Programming Language :: Python :: 3.11" in metadata


def _dependencies_dir(root: Path) -> Path:
    """Links to everything installed next to the running interpreter except rnmt (its
    editable install) and pip, for the new environment's sys.path."""
    deps = root / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith(("rnmt", "__editable__", "_rnmt", "pip", "__pycache__")) or name.endswith(".pth"):
            continue
        (deps / entry.name).symlink_to(entry)
    return deps


@pytest.fixture(scope="module")
def venv(built, request, tmp_path_factory) -> dict:
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    root = Path(cache.mkdir("rnmt-wheel")) if cache is not None else tmp_path_factory.mktemp("wheel")
    env_dir = root / "env"
    shutil.rmtree(env_dir, ignore_errors=True)
    env_dir.mkdir()
    py = env_dir / "venv" / "bin" / "python"
    _run([sys.executable, "-m", "venv", "--without-pip", env_dir / "venv"])
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "rnmt_test_dependencies.pth").write_text(str(_dependencies_dir(env_dir)) + "\n")
    # No index: every dependency must already be satisfied, and rnmt comes from the wheel.
    _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", built["wheel"], "-q"])
    installed = Path(purelib) / "rnmt"
    # A fixed modification time: the kernel build cached in `root` stays valid for the same
    # sources at the same paths (ninja compares times; changed contents change the name).
    for source in (installed / "kernels").iterdir():
        os.utime(source, (1_000_000_000, 1_000_000_000))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # The dependencies' scripts (ninja, which builds the kernels) are found on PATH, as in
    # an environment where pip installed them.
    env["PATH"] = os.pathsep.join([str(py.parent), env.get("PATH", ""), sysconfig.get_path("scripts")])
    env["TORCH_EXTENSIONS_DIR"] = str(root / "torch_extensions")
    work = tmp_path_factory.mktemp("elsewhere")  # not the checkout: nothing to find by accident
    return {"bin": py.parent, "python": py, "installed": installed, "env": env, "work": work}


def _in_venv(venv, *args, ok=True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600,
                            cwd=venv["work"], env=venv["env"])
    if ok:
        assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


KERNEL_CHECK = ("from rnmt import kernels; m = kernels.extension(); "
                "assert m is not None, 'C++ kernels unavailable'; print(m.__file__)")


def test_installed_wheel_counts_trains_translates_with_kernels(venv, capsys):
    where = _in_venv(venv, venv["python"], "-c", "import rnmt; print(rnmt.__file__)").stdout
    assert Path(where.strip()).is_relative_to(venv["installed"])

    # A built-in paper config by name, from a directory without configs/.
    params = json.loads(_in_venv(venv, venv["bin"] / "rnmt", "params", "atr/rnnsearch-atr", "--json").stdout)
    assert params["arch"] == "atr-rnnsearch" and abs(params["total"] - 67.72e6) < 0.05e6

    kernel_file = _in_venv(venv, venv["python"], "-c", KERNEL_CHECK).stdout.strip()
    assert Path(kernel_file).is_relative_to(venv["env"]["TORCH_EXTENSIONS_DIR"])

    # Two updates of the built-in paper config, shrunk, on a corpus outside the checkout.
    prefix = write_corpus(venv["work"] / "corpus", "train", 60)
    run = venv["work"] / "run"
    tiny = ["data.vocab.size=120", "data.dev=null", "data.test=null", "data.batch_tokens=400",
            "model.emb_size=8", "model.hidden_size=8", "train.max_steps=2", "train.log_every=1",
            "train.threads=1", "train.progress=false", "search.beam=2"]
    sets = [a for s in [f"data.train={prefix}", *tiny] for a in ("--set", s)]
    train = _in_venv(venv, venv["bin"] / "rnmt", "train", "atr/rnnsearch-atr", "--out", run, *sets)
    assert "kernels unavailable" not in train.stderr
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "plan" not in r] == [1, 2]  # the plan record opens the log

    source = venv["work"] / "in.es"
    source.write_text("Y dijo Dios:\n\nsea la luz\n", encoding="utf-8")
    translate = _in_venv(venv, venv["bin"] / "rnmt", "translate", "--model", run, "--input", source,
                         "--beam", "2", "--device", "cpu")
    assert "kernels unavailable" not in translate.stderr
    assert len(translate.stdout.split("\n")) == 4  # three lines out, blank line kept

    # The check can fail: without one of the kernel sources the kernels are unavailable.
    (venv["installed"] / "kernels" / KERNEL_SOURCES[-1]).unlink()
    broken = _in_venv(venv, venv["python"], "-c", KERNEL_CHECK, ok=False)
    assert broken.returncode != 0 and "C++ kernels unavailable" in broken.stderr
