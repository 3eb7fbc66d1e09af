"""The runtime as a user without PyTorch gets it: the ``rnmt-runtime`` wheel built from
runtime/, installed into a fresh virtual environment that has no torch, translating and
serving an export directory with the ``rnmt`` command the wheel installs.

No network at test time: the wheel is installed with ``--no-index --no-deps``, and the
environment reaches its dependencies (onnxruntime, sentencepiece, numpy; FastAPI and uvicorn
for serving) through a directory of links to exactly those distributions and what they
require, taken from the environment running the tests (as tests/system/test_package.py does
for the full wheel). Neither torch nor rnmt is among them, and the test checks that neither
can be imported there. The export comes from a two-update training run and `rnmt export`.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest

from tests.support import REPO, SAMPLE, tiny_config_tree, write_corpus

pytest.importorskip("onnxruntime")
RUNTIME_REQUIRES = ["onnxruntime", "sentencepiece", "numpy", "fastapi", "uvicorn"]


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{cmd}\n{result.stdout}\n{result.stderr}"
    return result


def _closure(names) -> dict:
    """The installed distributions ``names`` need, by name, with their own requirements."""
    found: dict = {}
    todo = list(names)
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0].strip()
        key = name.lower().replace("_", "-")
        if not key or key in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement not installed here
        found[key] = dist
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return found


def _dependencies_dir(root: Path) -> Path:
    """Links to the files of the runtime's dependency closure only (no torch, no rnmt)."""
    deps = root / "deps"
    deps.mkdir()
    purelib = Path(sysconfig.get_paths()["purelib"])
    dists = _closure(RUNTIME_REQUIRES)
    assert "torch" not in dists and "rnmt" not in dists
    for dist in dists.values():
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            source = purelib / top
            if source.exists() and not (deps / top).exists() and not top.endswith(".pth"):
                (deps / top).symlink_to(source)
    return deps


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    import rnmt
    from rnmt.export.exporter import export

    root = tmp_path_factory.mktemp("runtime-export")
    tree = tiny_config_tree(write_corpus(root, "train", 120), write_corpus(root, "dev", 10, offset=120))
    tree["train"].update(max_steps=2, validate_every=2)
    rnmt.train(tree, [], out=root / "run", log=lambda *_: None)
    export(root / "run", root / "export")
    return root / "export"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("runtime-venv")
    _run([sys.executable, "-m", "pip", "wheel", REPO / "runtime", "--no-deps", "--no-build-isolation", "--no-index",
          "-w", root / "dist", "-q"])
    (wheel,) = (root / "dist").glob("rnmt_runtime-*.whl")
    py = root / "venv" / "bin" / "python"
    _run([sys.executable, "-m", "venv", "--without-pip", root / "venv"])
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "runtime_test_dependencies.pth").write_text(str(_dependencies_dir(root)) + "\n")
    _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", "--no-deps", wheel, "-q"])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(py.parent), env.get("PATH", "")])
    work = tmp_path_factory.mktemp("elsewhere")  # not the checkout: nothing to import by accident
    return {"python": py, "rnmt": py.parent / "rnmt", "env": env, "work": work, "wheel": wheel}


def _in_venv(venv, *args, ok=True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600,
                            cwd=venv["work"], env=venv["env"], **kwargs)
    if ok:
        assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def test_wheel_holds_the_runtime_and_depends_on_three_packages(venv):
    import zipfile

    names = zipfile.ZipFile(venv["wheel"]).namelist()
    assert "rnmt_runtime/search.py" in names and not any(n.startswith("rnmt/") for n in names)
    meta = zipfile.ZipFile(venv["wheel"]).read(next(n for n in names if n.endswith("METADATA"))).decode()
    required = sorted(re.split(r"[ <>=]", line[len("Requires-Dist: "):])[0] for line in meta.splitlines()
                      if line.startswith("Requires-Dist: ") and "extra ==" not in line)
    assert required == ["numpy", "onnxruntime", "sentencepiece"]


def test_translate_without_torch_equals_the_runtime_in_process(venv, export_dir):
    probe = "import importlib.util as u; print(u.find_spec('torch') is None, u.find_spec('rnmt') is None)"
    assert _in_venv(venv, venv["python"], "-c", probe).stdout.split() == ["True", "True"]
    lines = (SAMPLE / "test.es").read_text(encoding="utf-8").splitlines()[:12] + [""]
    source = venv["work"] / "input.es"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = _in_venv(venv, venv["rnmt"], "translate", "--model", export_dir, "--input", source, "--beam", "3").stdout

    import rnmt_runtime

    expected = [r[0].text for r in rnmt_runtime.load(export_dir).translate(lines, rnmt_runtime.Options(beam=3))]
    assert out.split("\n")[:-1] == expected
    bad = _in_venv(venv, venv["rnmt"], "translate", "--model", export_dir, "--constraints", "x", ok=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --constraints")
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, body: dict) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/translate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_serve_without_torch_answers_as_the_torch_server(venv, export_dir):
    port = _free_port()
    server = subprocess.Popen([str(venv["rnmt"]), "serve", "--model", str(export_dir), "--port", str(port)],
                              cwd=venv["work"], env=venv["env"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    assert json.loads(response.read())["status"] == "ok"
                break
            except OSError:
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                assert time.monotonic() < deadline, "the runtime server did not start"
                time.sleep(0.5)
        body = {"texts": ["Y dijo Dios.", ""], "beam": 2, "nbest": 2}
        answer = _post(port, body)
    finally:
        server.terminate()
        server.wait(timeout=30)

    from fastapi.testclient import TestClient

    from rnmt.models.loading import load_model
    from rnmt.serve.app import create_app

    run = export_dir.parent / "run"
    with TestClient(create_app(load_model(run))) as client:
        reference = client.post("/translate", json=body).json()
    assert set(answer) == set(reference) == {"translations", "elapsed_ms"}
    for ours, theirs in zip(answer["translations"], reference["translations"]):
        assert set(ours) == set(theirs)
        assert ours["text"] == theirs["text"] and abs(ours["score"] - theirs["score"]) < 1e-3
        assert [h["text"] for h in ours.get("nbest", [])] == [h["text"] for h in theirs.get("nbest", [])]
