"""One training process per output directory.

Two trainers in one directory would interleave their checkpoints, their log and their
training state: a run started twice by mistake, or restarted while the process of an
earlier start still trains (a parent killed without its children, a second terminal).
`hold` takes an exclusive ``flock`` on ``OUT/.train.lock`` before anything is written
there; the kernel drops it when the process ends, however it ends (SIGKILL, power loss
of a network client), so a lock is never stale. The file keeps the holder's pid for the
error message. Objects of one process may share the lock (a test that builds two trainers
on one directory); the cross-process exclusion is the point. Without ``fcntl`` (not a
POSIX system), or on a file system that refuses locks, nothing is locked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

from rnmt.errors import UserError

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".train.lock"
_held: Dict[str, List[int]] = {}  # resolved directory -> [file descriptor, holders in this process]


class RunLock:
    """This process's hold on a directory; `release` (or garbage collection) lets it go."""

    def __init__(self, key: Optional[str]) -> None:
        self._key = key

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None or key not in _held:
            return
        entry = _held[key]
        entry[1] -= 1
        if entry[1] == 0:
            del _held[key]
            os.close(entry[0])  # closing the descriptor drops the flock

    def __del__(self) -> None:
        self.release()


def _pid_in(fd: int) -> str:
    """The holder's pid as its lock file says it."""
    return os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"


def hold(out: Path) -> RunLock:
    """Lock ``out`` for this process's training, or raise a `UserError` naming the process
    that trains there."""
    if fcntl is None:
        return RunLock(None)
    key = str(Path(out).resolve())
    if key in _held:
        _held[key][1] += 1
        return RunLock(key)
    path = Path(out) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UserError(f"{path}: cannot open the run's lock file ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _pid_in(fd)
        os.close(fd)
        raise UserError(f"{out}: another process (pid {holder}) is training in this directory; wait for it, "
                        f"stop it (SIGTERM saves a checkpoint and exits) or choose another --out") from None
    except OSError:  # a file system without locks (ENOLCK): train unprotected rather than not at all
        os.close(fd)
        return RunLock(None)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    _held[key] = [fd, 1]
    return RunLock(key)


def holder(out: Path) -> Optional[str]:
    """The pid of the process training in ``out`` now, or None when none is (checked by
    trying the lock, which is taken back at once; nothing is created)."""
    path = Path(out) / LOCK_FILE
    if fcntl is None or not path.is_file() or str(Path(out).resolve()) in _held:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _pid_in(fd)
    except OSError:
        return None
    finally:
        os.close(fd)  # drops the shared lock when it was taken
    return None

