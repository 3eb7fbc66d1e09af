"""Optional C++ kernels for the CPU hot paths, with pure-PyTorch fallbacks.

The kernels are compiled on first use with ``torch.utils.cpp_extension`` (a C++ compiler
is needed; the build is cached under PyTorch's extensions directory, so later runs load it
in well under a second). Anything that stops them (no compiler, a failed build, a tensor
that is not float32 on the CPU, or the execution plan's ``runtime.kernels: false``) leaves
the computation to the PyTorch expression they replace, which gives the same result.

`extension()` sits on the hot path (twice per GRU step), so it decides once: the first
call builds or loads the module under a lock (unless `configure` turned the kernels off),
and every later call reads one module attribute. `configure` is how a run's execution plan
(`rnmt.plan`) sets them for the process; ``with kernels.use(False): ...`` switches them off
(or on) within a block, for comparisons.

Kept only where they win: see docs/performance.md for the measurements.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import sysconfig
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterator, Optional

_lock = threading.Lock()
_UNDECIDED = object()
_active: object = _UNDECIDED  # what extension() returns once decided: the module or None
_switch: Optional[bool] = None  # set by `use`; None: the process's choice (`_enabled`)
_enabled = True  # the process's choice (`configure`)
_built: dict = {}  # "module": the loaded extension, or None once a build has failed
# Built into one module.
SOURCES = ("bindings.cpp", "additive_scores.cpp", "gru_gates.cpp", "ln_gates.cpp", "smoothed_nll.cpp",
           "onednn_products.cpp", "beam_candidates.cpp")


def _build_tag() -> str:
    """A short tag of this processor and this PyTorch installation. The build uses
    -march=native, so a cached build must not be reused on a machine with other instruction
    sets (e.g. a shared home directory); and PyTorch rebuilds an extension whose include
    paths changed, so two virtual environments sharing one name would rebuild in turn.
    The kernel sources are part of the tag too: two rnmt versions sharing an environment
    (a benchmark of an older checkout, say) would otherwise rebuild over each other."""
    import torch

    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                flags = line
                break
    except OSError:
        pass
    sources = "".join(p.read_text(encoding="utf-8") for p in sorted(Path(__file__).parent.glob("*.[ch]*")))
    identity = "|".join((platform.machine(), flags, torch.__version__, str(Path(torch.__file__).parent), sources,
                         Path(__file__).read_text(encoding="utf-8")))
    return hashlib.sha1(identity.encode()).hexdigest()[:8]


def extension() -> Optional[ModuleType]:
    """The compiled kernels (additive-attention scores, the GRU's inference step), or None
    (then use the fallbacks)."""
    active = _active
    if active is _UNDECIDED:
        return _decide()
    return active  # type: ignore[return-value]


def _decide() -> Optional[ModuleType]:
    global _active
    with _lock:
        if _active is _UNDECIDED:
            on = _enabled if _switch is None else _switch
            if on and "module" not in _built:
                _built["module"] = _build("kernels")
            _active = _built["module"] if on else None
        return _active  # type: ignore[return-value]


@contextmanager
def use(on: bool) -> Iterator[None]:
    """Within the block the kernels are on (if they can be built) or off, whatever the
    process's choice (`configure`); the previous choice is restored on exit."""
    global _active, _switch
    with _lock:
        before = (_active, _switch)
        _active, _switch = _UNDECIDED, bool(on)
    try:
        yield
    finally:
        with _lock:
            _active, _switch = before


LOCK_TIMEOUT_SECONDS = 300.0  # how long to wait for another process's build (runtime.kernel_lock_timeout)
_lock_timeout = LOCK_TIMEOUT_SECONDS


def configure(on: bool, lock_timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
    """The process's choice: the kernels on (built or loaded at the next `extension` call) or
    off, and how long a build waits for another process's; from the execution plan."""
    global _active, _enabled, _lock_timeout
    with _lock:
        if _switch is None and bool(on) != _enabled:
            _active = _UNDECIDED  # decided again at the next call
        _enabled, _lock_timeout = bool(on), float(lock_timeout)


def lock_timeout() -> float:
    return _lock_timeout


class BuildLock:
    """An exclusive ``flock`` on ``DIR/rnmt.lock`` held around the whole build.

    The kernel releases a flock when its holder dies, so a killed build never leaves this
    lock behind. PyTorch's own lock file (``DIR/lock``, created and waited for without
    limit) can be left behind; every rnmt build holds this flock while PyTorch's lock
    exists, so a ``DIR/lock`` found while holding the flock belongs to a dead build and is
    removed. A live build's lock is never touched: its owner holds the flock.
    """

    def __init__(self, directory: Path, timeout: float) -> None:
        self.path = Path(directory) / "rnmt.lock"
        self.timeout = timeout
        self._fd: Optional[int] = None

    def acquire(self) -> bool:
        """True once held; False when another process held it for ``timeout`` seconds."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        stale = self.path.with_name("lock")
        if stale.exists():
            print(f"rnmt: removing the lock of a kernel build that did not finish ({stale})", file=sys.stderr)
            stale.unlink(missing_ok=True)
        return True

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def _build(name: str) -> Optional[ModuleType]:
    sources = [str(Path(__file__).with_name(f)) for f in SOURCES]
    # The build runs `ninja`; the one pip installs sits next to this interpreter, which is
    # not on PATH when rnmt is started as .venv/bin/rnmt without activating the venv.
    scripts = sysconfig.get_path("scripts")
    if scripts and scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    started = time.perf_counter()
    try:
        from torch.utils import cpp_extension

        # -ffast-math lets the compiler reorder the kernels' sums across vector lanes; it is
        # given to the compiler only, so the process's floating-point flags are left alone.
        flags, link_flags = ["-O3", "-ffast-math", "-fopenmp-simd"], []
        if platform.machine() in ("x86_64", "AMD64"):
            flags.append("-march=native")
        if platform.system() == "Linux":
            # at::parallel_for runs its loop on one thread unless the kernel itself is built
            # with OpenMP. The extension then needs libgomp.so.1, which resolves to the copy
            # PyTorch has already loaded: one thread pool, torch.set_num_threads applies.
            flags.append("-fopenmp")
            link_flags.append("-fopenmp")
        full_name = f"rnmt_{name}_{_build_tag()}"
        build_dir = getattr(cpp_extension, "_get_build_directory", None)
        cached = build_dir is not None and any(Path(build_dir(full_name, False)).glob("*.so"))
        lock = None
        if build_dir is not None and os.name == "posix":
            lock = BuildLock(Path(build_dir(full_name, False)), lock_timeout())
            if not lock.acquire():
                print(f"rnmt: another process (pid {lock.holder()}) has been building the C++ kernels for "
                      f"{lock.timeout:g} s ({lock.path}); using PyTorch operations (same results, slower). "
                      f"runtime.kernel_lock_timeout sets the wait.", file=sys.stderr)
                return None
        try:
            module = cpp_extension.load(name=full_name, sources=sources, extra_cflags=flags,
                                        extra_ldflags=link_flags, verbose=False)
        finally:
            if lock is not None:
                lock.release()
    except Exception as exc:  # no compiler, no ninja, a failed build: fall back, say so once
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"rnmt: C++ kernels unavailable ({first_line[:200]}); using PyTorch operations "
              "(same results, slower). Set runtime.kernels: false to skip the attempt.", file=sys.stderr)
        return None
    seconds = time.perf_counter() - started
    if not cached:
        print(f"rnmt: compiled the C++ {name} in {seconds:.0f} s (cached for later runs)", file=sys.stderr)
    return module
