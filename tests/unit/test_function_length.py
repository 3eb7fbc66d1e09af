"""No function of the packages (rnmt and rnmt_runtime) is over `MOST_LINES` lines unless its
docstring says why (docs/architecture.md, "Size limits"): a long function is one nobody reads
whole."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, Tuple

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "rnmt"
PACKAGES = (PACKAGE, REPO / "rnmt_runtime")
MOST_LINES = 60  # from `def` to the last line, docstring included
# A docstring holding this phrase, followed by the reason, lets its function be longer.
REASON_PHRASE = "Over 60 lines because"

# Areas and single functions let off the limit, each with its reason (none today).
EXEMPT_AREAS: Dict[str, str] = {}
EXEMPT: Dict[str, str] = {}


def functions(roots: Tuple[Path, ...] = PACKAGES) -> Iterator[Tuple[str, str, int, ast.AST]]:
    """(file relative to the repository, qualified name, lines, node) of every function."""
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            yield from _walk(tree, rel, "")


def _walk(node: ast.AST, rel: str, prefix: str) -> Iterator[Tuple[str, str, int, ast.AST]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            yield rel, name, child.end_lineno - child.lineno + 1, child  # type: ignore[operator]
            yield from _walk(child, rel, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, rel, prefix + child.name + ".")
        else:
            yield from _walk(child, rel, prefix)


def _explained(node: ast.AST) -> bool:
    return REASON_PHRASE in (ast.get_docstring(node) or "")  # type: ignore[arg-type]


def test_no_function_is_over_the_limit_unless_its_docstring_says_why():
    long = [f"{rel}:{name} ({lines} lines)" for rel, name, lines, node in functions()
            if lines > MOST_LINES and not _explained(node) and f"{rel}:{name}" not in EXEMPT
            and not any(rel.startswith(area) for area in EXEMPT_AREAS)]
    assert not long, (f"over {MOST_LINES} lines: split them, or say why in the docstring "
                      f"('{REASON_PHRASE} ...'): " + "; ".join(long))


def test_every_single_exemption_is_still_needed():
    lines_of = {f"{rel}:{name}": lines for rel, name, lines, _ in functions()}
    stale = [key for key in EXEMPT if lines_of.get(key, 0) <= MOST_LINES and key in lines_of]
    assert not stale, f"no longer over {MOST_LINES} lines, drop from EXEMPT: {stale}"
    assert all(reason.strip() for reason in {**EXEMPT, **EXEMPT_AREAS}.values())


def test_the_phrase_is_explained_in_the_architecture_page():
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"`{REASON_PHRASE}`" in text


def test_the_scan_sees_a_long_function_and_its_reason():
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST_LINES))
    plain = ast.parse(f"def f():\n{body}\n")
    explained = ast.parse(f'def f():\n    """{REASON_PHRASE} it is a table."""\n{body}\n')
    (_, _, lines, node), = _walk(plain, "m.py", "")
    assert lines == MOST_LINES + 1 and not _explained(node)
    (_, _, _, node), = _walk(explained, "m.py", "")
    assert _explained(node)
