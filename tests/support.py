"""Helpers shared by test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import shutil

import pytest

# torch.utils.cpp_extension compiles with $CXX, else c++. Without one the kernels cannot
# exist and their tests skip; with one, a failed build is a failure.
HAVE_COMPILER = shutil.which(os.environ.get("CXX", "c++")) is not None

needs_kernel = pytest.mark.skipif(not HAVE_COMPILER, reason="no C++ compiler here: the kernels cannot be built")
