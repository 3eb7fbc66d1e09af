"""The package's layers only point down: no module imports a module of a higher layer.

The order, lowest first (docs/architecture.md). Modules of one layer may import each
other; every import is counted, including those inside functions (deferred imports keep
start-up fast, not the dependency away).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

import pytest

from tests.support import REPO

PACKAGE = REPO / "rnmt"

LAYERS = [
    # no model, no data: what every layer may use
    ("errors", "config", "device", "io", "resources", "memory", "hardware", "registry"),
    ("data",),  # vocabularies, corpora, batches and the special token ids
    # the pieces models are built from
    ("kernels", "precision", "products", "deferred_grads", "int8", "cells", "modules"),
    # the architectures, and the fast variants swapped into them once built (rnmt/fast/;
    # models/registry.py's build_model calls rnmt.fast.accelerate)
    ("models", "fast"),
    ("search", "training", "evaluation", "plan"),  # what is done with a model; the plan applied to one
    ("analysis", "serve", "reproduce", "bench", "api", "export", "web", "distill"),  # built on search and training
    ("commands", "cli", "__main__"),  # the command line on top
]
LAYER_OF = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def component(module: str) -> str:
    """``rnmt.models.base`` -> ``models``."""
    return module.split(".")[1]


def modules() -> Iterator[Tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1:  # rnmt/__init__.py itself imports nothing of the package
            yield ".".join(parts), path


def rnmt_imports(module: str, path: Path, source: Optional[str] = None) -> Iterator[Tuple[int, str]]:
    """(line, imported rnmt module) for every import statement of the file (or of ``source``,
    given as the text of ``path``)."""
    is_package = path.name == "__init__.py"
    if source is None:
        source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rnmt."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "rnmt" or (node.level and not node.module):  # from rnmt import cells: modules
                for alias in node.names:
                    yield node.lineno, f"{target}.{alias.name}"
            elif target.startswith("rnmt."):
                yield node.lineno, target


def test_every_component_has_a_layer():
    found = {component(m) for m, _ in modules()}
    assert found - set(LAYER_OF) == set(), "add new components to LAYERS (and to docs/architecture.md)"


def test_no_module_imports_a_higher_layer():
    upward: Dict[str, str] = {}
    for module, path in modules():
        own = LAYER_OF[component(module)]
        for line, target in rnmt_imports(module, path):
            if target.split(".")[1] in LAYER_OF and LAYER_OF[component(target)] > own:
                upward[f"{path.relative_to(PACKAGE.parent)}:{line}"] = target
    assert upward == {}, "imports from a higher layer: " + ", ".join(f"{k} -> {v}" for k, v in upward.items())


@pytest.mark.parametrize("source,expected", [
    ("from rnmt.models import build_model", ["rnmt.models"]),
    ("from rnmt import cells, kernels", ["rnmt.cells", "rnmt.kernels"]),
    ("def f():\n    import rnmt.training.trainer", ["rnmt.training.trainer"]),
    ("from . import beam", ["rnmt.search.beam"]),
])
def test_imports_are_found_wherever_they_are_written(source, expected):
    path = PACKAGE / "search" / "translator.py"
    assert [t for _, t in rnmt_imports("rnmt.search.translator", path, source)] == expected


# Models, modules and units are written in plain PyTorch; what makes them fast lives in these
# modules and is swapped in after a model is built (rnmt/fast/, docs/architecture.md).
SPEED_MODULES = ("rnmt.products", "rnmt.deferred_grads", "rnmt.int8", "rnmt.kernels", "rnmt.precision",
                 "rnmt.memory", "rnmt.fast")
PLAIN_COMPONENTS = ("models", "modules", "cells")
# The one seam: build_model hands what it built to rnmt.fast.accelerate.
SEAMS = {"rnmt.models.registry": {"rnmt.fast"}}


def speed_imports(module: str, path: Path, source: Optional[str] = None) -> Dict[str, str]:
    """``{"file:line": imported speed module}`` of one file of models/, modules/ or cells/."""
    found = {}
    for line, target in rnmt_imports(module, path, source):
        hit = next((s for s in SPEED_MODULES if target == s or target.startswith(s + ".")), None)
        if hit is not None and hit not in SEAMS.get(module, set()):
            found[f"{path.relative_to(PACKAGE.parent)}:{line}"] = target
    return found


def test_models_modules_and_cells_import_no_speed_machinery():
    found: Dict[str, str] = {}
    for module, path in modules():
        if component(module) in PLAIN_COMPONENTS:
            found.update(speed_imports(module, path))
    assert found == {}, "plain model code imports speed machinery (put it in rnmt/fast/): " + ", ".join(
        f"{k} -> {v}" for k, v in found.items())


@pytest.mark.parametrize("source,caught", [
    ("from rnmt.products import Linear", True),
    ("from rnmt import deferred_grads", True),
    ("def f():\n    from rnmt.fast.cells import FastGRU", True),
    ("import rnmt.kernels", True),
    ("from rnmt.precision import fp32", True),
    ("from rnmt.modules.scores import AttentionSteps", False),
    ("from rnmt.cells.base import Cell", False),
])
def test_the_speed_import_check_catches_what_it_should(source, caught):
    path = PACKAGE / "cells" / "gru.py"
    assert bool(speed_imports("rnmt.cells.gru", path, source)) == caught


def test_the_fast_paths_of_the_units_live_in_fast():
    assert not any((PACKAGE / "cells" / f"{name}.py").exists() for name in ("gru_cuda", "host_reads", "ln_gates"))
    assert (PACKAGE / "fast" / "gru_cuda.py").exists() and (PACKAGE / "fast" / "ln_gates.py").exists()
