"""``rnmt serve`` as a child process on a free loopback port, for benchmarks and tests.

The serving benchmarks (benchmarks/serve_*.py) and the tests that talk to a real server
process share this: start it, learn its port from the address it prints, keep draining its
log (asyncio reports every ``accept()`` that runs out of files, and a full pipe would block
the server), wait until ``/health`` answers, and stop it however the caller's block ends.
"""

from __future__ import annotations

import contextlib
import re
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]


@dataclass
class ServerProcess:
    proc: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def serve_process(model: str | Path, options: Sequence[str] = (), open_files: Optional[int] = None,
                  log_level: str = "warning", ready_timeout: float = 90.0) -> Iterator[ServerProcess]:
    """``rnmt serve --model MODEL OPTIONS`` on one thread, yielded once ``/health`` answers 200.

    ``open_files`` sets the child's limit on open files (soft and hard: ``rnmt serve`` raises
    its soft limit to the hard one). On leaving, the server gets SIGTERM, then SIGKILL if it
    has not stopped within 30 s.
    """
    def limit_open_files() -> None:
        if open_files:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    cmd = [sys.executable, "-m", "rnmt", "serve", "--model", str(model), "--port", "0", "--threads", "1",
           "--log-level", log_level, *options]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=REPO,
                            preexec_fn=limit_open_files)
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + ready_timeout
        url = None
        while url is None:
            line = proc.stderr.readline()  # "serving ... on http://127.0.0.1:PORT/ ..."
            match = re.search(r"on (http://127\.0\.0\.1:\d+)/", line or "")
            if match:
                url = match.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rnmt serve did not start: {line}{proc.stderr.read() if proc.poll() else ''}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        while not _healthy(url):  # the model loads before the server listens; it may still be busy
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rnmt serve at {url} did not answer /health")
            time.sleep(0.1)
        yield ServerProcess(proc, url)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def waiting(sock: socket.socket) -> bool:
    """Whether the connection is still open and the server has sent nothing on it."""
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)
