"""benchmarks/ runs as a package (``python -m benchmarks.X``): a benchmark imports another by
its package name. A bare ``import flops`` only worked while scripts edited ``sys.path``, and
inside a function it fails only when that function runs (a peer's FLOP count at the end of
a long benchmark), so the imports are checked here, not by running them."""

from __future__ import annotations

import ast

from tests.support import REPO

BENCHMARKS = REPO / "benchmarks"


def sources() -> list:
    """benchmarks/'s own files (not a peer's virtual environment under peers/<peer>/venv)."""
    return sorted(p for p in BENCHMARKS.rglob("*.py") if "venv" not in p.relative_to(BENCHMARKS).parts)


def sibling_names() -> set:
    """The importable names a bare import could mean: modules and packages of benchmarks/
    at any depth (``flops``, ``zoo_ratios``, ``peers``, ``driver``...)."""
    names = {p.stem for p in sources() if p.stem != "__init__"}
    return (names | {p.parent.name for p in sources() if p.stem == "__init__"}) - {"benchmarks"}


def bare_imports(source: str, names: set) -> list:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] in names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in names:
                found.append((node.lineno, node.module))
    return found


def test_benchmarks_import_each_other_through_the_package():
    names = sibling_names()
    offenders = [f"{path.relative_to(REPO)}:{line}: {name}"
                 for path in sources()
                 for line, name in bare_imports(path.read_text(encoding="utf-8"), names)]
    assert offenders == [], "import these as benchmarks.<module>: " + ", ".join(offenders)


def test_the_check_sees_an_import_inside_a_function():
    source = "def flops_model():\n    import flops\n    from zoo_ratios import run\n    from benchmarks import flops\n"
    assert bare_imports(source, {"flops", "zoo_ratios"}) == [(2, "flops"), (3, "zoo_ratios")]
