"""Make fairseq 0.12.2 and hydra-core 1.0.7 importable on Python 3.11.

Python 3.11 refuses a dataclass field whose default is an instance of another dataclass
("mutable default ... is not allowed: use default_factory"). Both packages declare their
nested configs that way, e.g. ``common: CommonConfig = CommonConfig()`` or
``field(default=QuantNoiseConfig())``. This rewrites such class-level fields to
``field(default_factory=...)``, which builds the same default for every instance.

Usage: python patch_py311.py SITE_PACKAGES_DIR [PACKAGE ...]   (default: fairseq hydra)
Idempotent: a second run finds nothing left to change.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# "    name: Annotation = ClassName()" in a class body (4-space indentation)
ANNOTATED = re.compile(r"^(    \w+\s*:\s*[\w\[\]., ]+?)\s*=\s*([A-Z]\w*)\(\)(\s*(#.*)?)$")
# "field(default=ClassName())"
FIELD_DEFAULT = re.compile(r"field\(\s*default\s*=\s*([A-Z]\w*)\(\)\s*([,)])")
HAS_FIELD = re.compile(r"^from dataclasses import .*\bfield\b", re.M)


def patch_text(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    top = None  # kind of the last statement at column 0: "class", "def" or "other"
    changes = 0
    for i, line in enumerate(lines):
        if line and not line[0].isspace() and not line.startswith(("#", "@", ")", "]", "}")):
            top = "class" if line.startswith("class ") else ("def" if line.startswith(("def ", "async def ")) else "other")
        if top == "class":
            m = ANNOTATED.match(line)
            if m:
                lines[i] = f"{m.group(1)} = field(default_factory={m.group(2)}){m.group(3)}"
                changes += 1
        new, n = FIELD_DEFAULT.subn(r"field(default_factory=\1\2", lines[i])
        if n:
            lines[i] = new
            changes += n
    out = "\n".join(lines)
    if changes and not HAS_FIELD.search(out):
        # import field after the module docstring / __future__ imports
        body = out.split("\n")
        at = 0
        for j, line in enumerate(body):
            if line.startswith("from __future__"):
                at = j + 1
        if at == 0:
            at = next((j for j, line in enumerate(body) if line.startswith(("import ", "from "))), 0)
        body.insert(at, "from dataclasses import field")
        out = "\n".join(body)
    return out, changes


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    site = Path(argv[0])
    packages = argv[1:] or ["fairseq", "hydra"]
    total = 0
    for pkg in packages:
        root = site / pkg
        if not root.is_dir():
            print(f"patch_py311: {root} not found", file=sys.stderr)
            return 1
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            new, n = patch_text(text)
            if n:
                path.write_text(new, encoding="utf-8")
                print(f"patched {n} field(s) in {path.relative_to(site)}")
                total += n
    print(f"patch_py311: {total} field(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
