"""Build hook of the runtime wheel: the package's one copy is the repository's top-level
rnmt_runtime/ (the full rnmt wheel ships it too); it is copied here before setuptools looks
for it, and removed after the build."""

import atexit
import shutil
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "rnmt_runtime"
TARGET = HERE / "rnmt_runtime"

if SOURCE.is_dir():  # building from the repository (an unpacked sdist holds its own copy)
    shutil.rmtree(TARGET, ignore_errors=True)
    shutil.copytree(SOURCE, TARGET, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    atexit.register(shutil.rmtree, TARGET, True)

setup()
