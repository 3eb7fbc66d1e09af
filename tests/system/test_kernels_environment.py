"""The C++ kernels are the execution plan's choice (`kernels.configure`), not the environment's."""

import os
import sys

import pytest

# the kernels against their fallbacks whatever the process's choice
pytestmark = pytest.mark.usefixtures("kernels_on")


def test_the_environment_no_longer_switches_the_kernels():
    """``RNMT_KERNELS=0`` of earlier versions changes nothing in the package; `configure`
    (what a plan's ``runtime.kernels: false`` calls) turns them off, and on again."""
    import subprocess

    code = ("from rnmt import kernels; built = kernels.extension() is not None; "
            "kernels.configure(False); assert kernels.extension() is None; "
            "kernels.configure(True); assert (kernels.extension() is not None) == built; print(built)")
    env = dict(os.environ, RNMT_KERNELS="0")
    with_var = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    env.pop("RNMT_KERNELS")
    without = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert with_var.stdout.strip() == without.stdout.strip()
