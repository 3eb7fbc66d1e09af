"""Helpers shared by test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

# torch.utils.cpp_extension compiles with $CXX, else c++. Without one the kernels cannot
# exist and their tests skip; with one, a failed build is a failure.
HAVE_COMPILER = shutil.which(os.environ.get("CXX", "c++")) is not None

needs_kernel = pytest.mark.skipif(not HAVE_COMPILER, reason="no C++ compiler here: the kernels cannot be built")


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` (with benchmarks/ on the path for its own imports, and
    registered in sys.modules, which dataclasses look their module up in)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
