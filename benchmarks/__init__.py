"""rnmt's benchmarks: the peer comparison's harness, the measurements behind the figures that
docs/ quotes, and (in ``benchmarks.studies``) one-off studies whose answers docs/ records.

Each runs as a module from the repository root, ``python -m benchmarks.run ...``;
benchmarks/README.md lists them with the figure each one backs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional

REPO = Path(__file__).resolve().parent.parent


def module_command(module: str, *args: str) -> List[str]:
    """The command line that runs benchmark ``module`` (``benchmarks.x``) in a child process
    with this interpreter; give it :func:`module_env` so that it runs from any directory."""
    return [sys.executable, "-m", module, *args]


def module_env(env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """``env`` (default: this process's) with the repository root first on PYTHONPATH, where a
    child started by :func:`module_command` finds ``benchmarks`` and ``rnmt``."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), out.get("PYTHONPATH", "")) if p)
    return out
