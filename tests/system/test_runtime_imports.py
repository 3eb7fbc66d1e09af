"""The runtime imported in a fresh process loads neither torch nor rnmt's training package,
and ``rnmt translate --model EXPORT_DIR`` in the full install reaches it before anything
imports torch (rnmt.cli's first lines)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO

PACKAGE = REPO / "rnmt_runtime"


def test_importing_every_runtime_module_loads_neither_torch_nor_rnmt():
    modules = sorted(f"rnmt_runtime.{p.stem}" for p in PACKAGE.glob("*.py")
                     if p.stem not in ("__init__", "__main__"))
    assert "rnmt_runtime.search" in modules and "rnmt_runtime.cli" in modules
    code = ("import importlib, json, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'rnmt'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_rnmt_cli_hands_an_export_directory_to_the_runtime_before_torch(tmp_path):
    export = tmp_path / "export"
    export.mkdir()
    (export / "manifest.json").write_text('{"format": "something else"}', encoding="utf-8")
    code = ("import sys\nfrom rnmt.cli import main\n"
            f"code = main(['translate', '--model', {str(export)!r}, '--input', {str(export / 'manifest.json')!r}])\n"
            "print(code, 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.stdout.split() == ["2", "False"], result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and "manifest.json" in result.stderr
    assert "not an rnmt export" in result.stderr


def test_dispatch_is_decided_by_the_model_argument_alone(tmp_path):
    from rnmt_runtime.cli import dispatches

    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    assert dispatches(["translate", "--model", str(tmp_path)])
    assert dispatches(["serve", f"--model={tmp_path}", "--port", "0"])
    assert not dispatches(["translate", "--model", str(tmp_path / "missing")])
    assert not dispatches(["train", "--model", str(tmp_path)])
    assert not dispatches([])
