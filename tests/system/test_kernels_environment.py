"""The C++ kernels' environment switch (RNMT_KERNELS) is read once per process."""

import os
import sys

import pytest

# the kernels against their fallbacks whatever RNMT_KERNELS says
pytestmark = pytest.mark.usefixtures("kernels_on")


def test_the_environment_switch_is_read_once_per_process():
    """``RNMT_KERNELS=0`` at start-up turns the kernels off; the hot path then never reads
    the environment again."""
    import subprocess

    code = ("import os; from rnmt import kernels; assert kernels.extension() is None; "
            "os.environ['RNMT_KERNELS'] = '1'; assert kernels.extension() is None; print('ok')")
    env = dict(os.environ, RNMT_KERNELS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
