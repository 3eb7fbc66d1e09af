"""rnmt/training/run_lock.py in one process (the refusal of a second process is
tests/system/test_train_faults_kills.py)."""

import errno

import pytest

from rnmt.errors import UserError
from rnmt.training import run_lock


def test_holders_in_one_process_share_the_lock_and_the_last_release_drops_it(tmp_path):
    first, second = run_lock.hold(tmp_path), run_lock.hold(tmp_path)
    key = str(tmp_path.resolve())
    assert run_lock._held[key][1] == 2 and (tmp_path / run_lock.LOCK_FILE).read_text().strip().isdigit()
    first.release()
    first.release()  # twice is once
    assert run_lock._held[key][1] == 1
    second.release()
    assert key not in run_lock._held


def test_a_file_system_without_locks_trains_unprotected(tmp_path, monkeypatch):
    def refuse(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(run_lock.fcntl, "flock", refuse)
    lock = run_lock.hold(tmp_path)
    assert str(tmp_path.resolve()) not in run_lock._held
    lock.release()


def test_a_directory_held_elsewhere_is_a_one_line_error(tmp_path, monkeypatch):
    def busy(fd, op):
        raise BlockingIOError(errno.EWOULDBLOCK, "Resource temporarily unavailable")

    (tmp_path / run_lock.LOCK_FILE).write_text("4242\n")
    monkeypatch.setattr(run_lock.fcntl, "flock", busy)
    with pytest.raises(UserError, match=r"another process \(pid 4242\) is training in this directory"):
        run_lock.hold(tmp_path)
    assert str(tmp_path.resolve()) not in run_lock._held
