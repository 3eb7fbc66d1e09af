"""The documentation names real things: every backticked repository path in the README,
docs/ and benchmarks/README.md exists, and every backticked ``rnmt.x.y`` resolves to a
module or an attribute of one. Renaming a module or a file without its docs fails here."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.support import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "README.md"]
PATH = re.compile(r"`((?:rnmt|benchmarks|tests|configs|examples|\.ci)/[A-Za-z0-9_./-]+)`")
NAME = re.compile(r"`(rnmt(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")
NOT_IN_A_CHECKOUT = {"rnmt/configs"}  # the wheel's copy of configs/, made at build time
NOT_NAMES = {"rnmt.lock"}  # a file name (the kernels' build lock)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for attr in parts[k:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_backticked_paths_exist(doc):
    text = doc.read_text(encoding="utf-8")
    missing = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip("/.")
        if path in NOT_IN_A_CHECKOUT or "*" in path:
            continue
        if not ((REPO / path).exists() or (doc.parent / path).exists()):  # benchmarks/README.md: its own folder
            missing.append(path)
    assert not missing, f"{doc.name} names paths that do not exist: {sorted(set(missing))}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_backticked_python_names_resolve(doc):
    names = {m.group(1) for m in NAME.finditer(doc.read_text(encoding="utf-8"))} - NOT_NAMES
    unresolved = sorted(n for n in names if not _resolves(n))
    assert not unresolved, f"{doc.name} names what rnmt does not have: {unresolved}"
