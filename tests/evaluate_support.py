"""Shared helpers for the evaluation tests (this module defines no tests itself)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import List, Optional, Sequence

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def run_command(module: ModuleType, argv: Sequence[str]) -> int:
    """Parse ``argv`` with the command module's own options and run it."""
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return module.run(parser.parse_args(list(argv)))


def sacrebleu_script() -> Optional[str]:
    """The ``sacrebleu`` console script of this interpreter's environment, if installed."""
    beside_python = Path(sys.executable).parent / "sacrebleu"
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("sacrebleu")


def run_sacrebleu(args: List[str]) -> str:
    """Run the sacrebleu console script and return its stdout; skip if it is missing."""
    script = sacrebleu_script()
    if script is None:
        pytest.skip("the sacrebleu console script is not installed next to this Python")
    done = subprocess.run([script, *args], capture_output=True, text=True, check=True)
    return done.stdout
