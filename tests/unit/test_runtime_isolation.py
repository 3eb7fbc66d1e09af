"""The runtime (rnmt_runtime) stands without PyTorch and without rnmt's training package: no
module of it imports either (its source read). The imports themselves, in a fresh
process, and rnmt's hand-over to the runtime are checked in
tests/system/test_runtime_imports.py (a unit test starts no process and writes no file)."""

from __future__ import annotations

import ast

from tests.support import REPO

PACKAGE = REPO / "rnmt_runtime"
FORBIDDEN = ("torch", "rnmt")  # "rnmt" the package, not "rnmt_runtime"


def _imported(path) -> set:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names.add(str(node.args[0].value).split(".")[0])
    return names


def test_no_runtime_source_file_imports_torch_or_rnmt():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 5
    for path in files:
        assert not (_imported(path) & set(FORBIDDEN)), path.name
        text = path.read_text(encoding="utf-8")
        assert "import torch" not in text and "from rnmt." not in text and "from rnmt import" not in text, path.name


def test_loading_an_export_can_run_no_code_from_it():
    """No unpickling, no evaluation and no custom-operator library anywhere in the runtime:
    an export directory is JSON, protocol buffers and ONNX graphs of onnxruntime's own operators."""
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not (_imported(path) & {"pickle", "marshal", "dill", "joblib", "shelve"}), path.name
        for call in ("eval(", "exec(", "register_custom_ops_library", "torch.load"):
            assert call not in text, f"{path.name}: {call}"
