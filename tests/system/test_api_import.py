"""The Python interface in a fresh interpreter: `import rnmt` loads no PyTorch, and
`rnmt.train` and `rnmt.evaluate` stay functions after their packages are imported."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO


def test_import_is_cheap_and_train_evaluate_are_the_api_functions():
    code = ("import inspect, sys, rnmt; assert 'torch' not in sys.modules; rnmt.load; rnmt.train; rnmt.evaluate; "
            "assert 'torch' not in sys.modules; import rnmt.training.trainer, rnmt.evaluation.metrics; "
            "assert inspect.isfunction(rnmt.train) and inspect.isfunction(rnmt.evaluate); "
            "print(rnmt.evaluate(['a b c d'], ['a b c d']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "'bleu': 100.0" in result.stdout
