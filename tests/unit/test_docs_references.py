"""The documentation names real things: every backticked repository path in the README,
docs/ and benchmarks/README.md exists, and every backticked ``rnmt.x.y`` resolves to a
module or an attribute of one. Renaming a module or a file without its docs fails here."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator

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


# The front page carries no commit hashes: measurements, with their commits, live in docs/.
HASH = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/-])")


def test_readme_names_no_commits():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    hashes = sorted(set(HASH.findall(text)))
    assert not hashes, f"README.md names commits (move the measurement into docs/): {hashes}"


def test_commit_pattern_finds_a_hash_and_spares_words():
    assert HASH.findall("at 30a94a5; bf16 before, 0.24 of fairseq's") == ["30a94a5"]
    assert not HASH.findall("fp32 bf16 avx512_bf16 deadbeef 1234567 docs/x-3fa9c21.png")


LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINKED = [*DOCS, REPO / "CHANGELOG.md", REPO / "docs" / "README.md"]


def _anchors(path) -> Iterator[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens, -1 on repeats."""
    seen: dict[str, int] = {}
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        if not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        yield slug if n == 0 else f"{slug}-{n}"


@pytest.mark.parametrize("doc", sorted(set(LINKED)), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(doc):
    """Every relative link reaches a file, and every #anchor into a Markdown page a heading
    there: moving a page or renaming a section without its links fails here."""
    broken = []
    for target in LINK.findall(FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in set(_anchors(path)):
            broken.append(target)
    assert not broken, f"{doc.name} links to what does not exist: {broken}"
