"""The C++ kernels' build lock: a dead build's lock is removed, a live one is waited for, and a
timeout falls back to PyTorch."""

import os
import sys
import time

import pytest

from rnmt import kernels

# the kernels against their fallbacks whatever the process's choice
pytestmark = pytest.mark.usefixtures("kernels_on")


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").write("")  # PyTorch's lock file, as a live build has it
print("held", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_a_dead_builds_lock_is_removed_and_a_live_one_never(tmp_path):
    import subprocess

    torch_lock = tmp_path / "lock"
    # A build killed midway: PyTorch's lock file is left, nobody holds the flock.
    torch_lock.write_text("")
    lock = kernels.BuildLock(tmp_path, timeout=1)
    assert lock.acquire() and not torch_lock.exists()
    lock.release()

    # A live build in another process: the wait times out and its lock file stays.
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path / "rnmt.lock"), str(torch_lock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        assert not kernels.BuildLock(tmp_path, timeout=0.5).acquire()
        assert 0.4 < time.monotonic() - t0 < 5 and torch_lock.exists()
    finally:
        holder.kill()
        holder.wait()
    # Its holder died: the flock went with it.
    assert kernels.BuildLock(tmp_path, timeout=1).acquire()


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_a_build_lock_timeout_falls_back_to_pytorch_with_a_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(kernels.BuildLock, "acquire", lambda self: False)
    assert kernels._build("kernels") is None
    err = capsys.readouterr().err
    assert "another process" in err and "using PyTorch operations" in err and "runtime.kernel_lock_timeout" in err


def test_the_plan_sets_the_build_locks_wait(monkeypatch):
    """``runtime.kernel_lock_timeout`` reaches the lock through the plan; the environment
    variable of earlier versions does not."""
    monkeypatch.setenv("RNMT_KERNEL_LOCK_TIMEOUT", "7")
    try:
        assert kernels.lock_timeout() == kernels.LOCK_TIMEOUT_SECONDS
        kernels.configure(True, 0.5)
        assert kernels.lock_timeout() == 0.5
    finally:
        kernels.configure(True, kernels.LOCK_TIMEOUT_SECONDS)
