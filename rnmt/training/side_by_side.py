"""Training runs side by side, each in its own process: ``rnmt reproduce --jobs N`` and
``rnmt distill --jobs N``.

Two one-thread runs use two cores better than one two-thread run (the recurrent steps are
small products that a second thread barely speeds up), so both commands start up to N
worker processes, each running one job at a time and taking the next from a shared queue,
its output appended to the job's log file.

SIGTERM, SIGINT or SIGHUP to the parent stops the pool as a sitting ends: the signal is
passed on to every worker as SIGTERM (each run saves its checkpoint and exits), no further
job starts, and the caller is told (`Pool.stopped`) so that it can say how to continue.
Without this a killed parent would leave its workers training on, unseen, and a restart
would start a second process on the same runs.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from rnmt.errors import UserError

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass
class Job:
    """One worker process to run: ``key`` names it in messages, ``command`` is its argv, its
    output goes to ``log_path``, and ``after_each`` runs in the parent once it exits 0."""

    key: str
    command: List[str]
    log_path: Path
    after_each: Callable[[], None] = lambda: None


class Pool:
    """What the worker threads share: the jobs still to start, the processes running, the
    failures, and the signal that stopped the pool."""

    def __init__(self, queue: Sequence[Job], log: Callable[[str], None]) -> None:
        self.queue, self.log = list(queue), log
        self.lock = threading.Lock()
        self.failed: List[str] = []
        self.procs: Dict[str, subprocess.Popen] = {}
        self.stopped: List[str] = []

    def stop(self, signum: int, _frame) -> None:
        """The signal handler: no further job starts, and every worker gets SIGTERM."""
        self.stopped.append(signal.Signals(signum).name)  # first: a worker starting now sees it (`_start`)
        self.queue.clear()
        for proc in list(self.procs.values()):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    def work(self) -> None:
        """One worker thread: take the next job and run it, until none is left, one failed or
        a signal came."""
        while True:
            with self.lock:
                if not self.queue or self.failed or self.stopped:
                    return
                job = self.queue.pop(0)
                # under the lock: two threads' prints would otherwise interleave their newlines
                self.log(f"[{job.key}] started in its own process (log: {job.log_path})")
            self._finished(job, self._start(job))

    def _start(self, job: Job) -> int:
        """Run ``job``'s process to its end, its output in its log; its exit code."""
        job.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(job.log_path, "a", encoding="utf-8") as out:
            proc = subprocess.Popen(job.command, stdout=out, stderr=subprocess.STDOUT)
            self.procs[job.key] = proc
            if self.stopped:  # the signal came between the check in `work` and the start
                proc.send_signal(signal.SIGTERM)
            return proc.wait()

    def _finished(self, job: Job, code: int) -> None:
        with self.lock:
            self.procs.pop(job.key, None)
            if self.stopped:
                self.log(f"[{job.key}] stopped (exit {code}); its last checkpoint is kept")
            elif code != 0:
                self.failed.append(f"{job.key} (exit {code}, see {job.log_path})")
            else:
                self.log(f"[{job.key}] finished")
                job.after_each()


def worker_exit(work: Callable[[], Optional[int]]) -> int:
    """A worker process's exit code: ``work()``'s (0 for None), or 2 with one line
    ``error: ...`` on stderr for a `UserError` (`rnmt.reproduce.worker`, `rnmt.distill.worker`)."""
    try:
        return work() or 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run_side_by_side(jobs: Sequence[Job], workers: int, log: Callable[[str], None]) -> Pool:
    """Run ``jobs`` in order on up to ``workers`` processes at a time; returns the pool, whose
    ``stopped`` names the signal that ended it early and ``failed`` the jobs that failed
    (a failure starts no further job; those running finish)."""
    pool = Pool(jobs, log)
    previous = {}
    if threading.current_thread() is threading.main_thread():  # Python installs handlers there only
        previous = {sig: signal.signal(sig, pool.stop) for sig in HANDLED}
    threads = [threading.Thread(target=pool.work, daemon=True) for _ in range(min(workers, len(pool.queue)))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=1.0)  # short waits: the handler runs between them
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return pool
