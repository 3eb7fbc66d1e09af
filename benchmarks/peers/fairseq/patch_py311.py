"""Make fairseq 0.12.2 and hydra-core 1.0.7 importable on Python 3.11 and 3.12.

Python 3.11 refuses a dataclass field whose default is an instance of another dataclass
("mutable default ... is not allowed: use default_factory"). Both packages declare their
nested configs that way, e.g. ``common: CommonConfig = CommonConfig()`` or
``field(default=QuantNoiseConfig())``. This rewrites such class-level fields to
``field(default_factory=...)``, which builds the same default for every instance.

One reader has to follow: fairseq's ``hydra_init`` registers each field's ``.default``,
which is unset for a ``default_factory`` field, so it is made to call the factory
(``REPLACEMENTS``). ``REPLACEMENTS`` also turns off the Transformer encoder layer's fused
inference path (layer and encoder), which fails under torch 2.13 (see there).

Usage: python patch_py311.py SITE_PACKAGES_DIR [PACKAGE ...]   (default: fairseq hydra)
Idempotent: a second run finds nothing left to change.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# "name: Annotation = ClassName()" (directly in a class body, checked by the caller)
ANNOTATED = re.compile(r"^(\s+\w+\s*:\s*[\w\[\]., ]+?)\s*=\s*([A-Z]\w*)\(\)(\s*(#.*)?)$")
# "field(default=ClassName())"
FIELD_DEFAULT = re.compile(r"field\(\s*default\s*=\s*([A-Z]\w*)\(\)\s*([,)])")
HAS_FIELD = re.compile(r"^from dataclasses import .*\bfield\b", re.M)
# exact rewrites in given files: (path under site-packages, old text, new text)
REPLACEMENTS = [
    ("fairseq/dataclass/initialize.py",
     "        v = FairseqConfig.__dataclass_fields__[k].default\n",
     "        f = FairseqConfig.__dataclass_fields__[k]\n"
     "        v = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()\n"),
    ("fairseq/dataclass/initialize.py", "import logging\n", "import dataclasses\nimport logging\n"),
    # Not a Python 3.11 matter: fairseq 0.12.2's Transformer encoder layer hands inference to
    # torch's fused BetterTransformer kernel without the mask type newer torch requires ("Mask
    # Type should be defined"); the layer's ordinary path (the one training uses) is kept.
    ("fairseq/modules/transformer_layer.py",
     "        if (\n            self.BT_version\n            and x.dim() == 3\n",
     "        if (\n            False  # fused path off (benchmarks/peers/fairseq/patch_py311.py)\n"
     "            and self.BT_version\n            and x.dim() == 3\n"),
    # ... and the encoder that turns its states batch-first for that path
    ("fairseq/models/transformer/transformer_encoder.py",
     "        if (\n            BT_version\n            and x.dim() == 3\n",
     "        if (\n            False  # fused path off (benchmarks/peers/fairseq/patch_py311.py)\n"
     "            and BT_version\n            and x.dim() == 3\n"),
    # Python 3.12 removed the importers' find_module/load_module, which hydra 1.0.7's plugin
    # scan calls ("'FileFinder' object has no attribute 'find_module'"); import by name instead.
    ("hydra/core/plugins.py",
     "                    m = importer.find_module(modname)\n"
     "                    with warnings.catch_warnings(record=True) as recorded_warnings:\n"
     "                        loaded_mod = m.load_module(modname)\n",
     "                    with warnings.catch_warnings(record=True) as recorded_warnings:\n"
     "                        loaded_mod = importlib.import_module(modname)\n"),
]
BLOCK = re.compile(r"^(\s*)(class|def|async\s+def)\b")


def patch_text(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    stack: list[tuple[int, str]] = []  # enclosing class/def blocks: (indentation, kind)
    changes = 0
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "@", ")", "]", "}")):
            indent = len(line) - len(line.lstrip())
            while stack and stack[-1][0] >= indent:
                stack.pop()
            in_class_body = bool(stack) and stack[-1][1] == "class"
            m = ANNOTATED.match(line)
            if m and in_class_body:
                lines[i] = f"{m.group(1)} = field(default_factory={m.group(2)}){m.group(3)}"
                changes += 1
            b = BLOCK.match(line)
            if b:
                stack.append((indent, "class" if b.group(2) == "class" else "def"))
        new, n = FIELD_DEFAULT.subn(r"field(default_factory=\1\2", lines[i])
        if n:
            lines[i] = new
            changes += n
    out = "\n".join(lines)
    if changes and not HAS_FIELD.search(out):
        # import field after the __future__ imports, or before the first import
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
    for rel, old, new in REPLACEMENTS:
        path = site / rel
        if path.parts[len(site.parts)] not in packages or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if new in text:
            continue  # already patched
        if old not in text:
            print(f"patch_py311: {rel}: expected text not found", file=sys.stderr)
            return 1
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        print(f"patched {rel}")
        total += 1
    print(f"patch_py311: {total} change(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
