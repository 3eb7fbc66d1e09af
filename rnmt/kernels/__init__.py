"""Optional C++ kernels for the CPU hot paths, with pure-PyTorch fallbacks.

The kernels are compiled on first use with ``torch.utils.cpp_extension`` (a C++ compiler
is needed; the build is cached under PyTorch's extensions directory, so later runs load it
in well under a second). Anything that stops them (no compiler, a failed build, a tensor
that is not float32 on the CPU, or ``RNMT_KERNELS=0`` in the environment) leaves the
computation to the PyTorch expression they replace, which gives the same result.

`extension()` sits on the hot path (twice per GRU step), so it decides once: the first
call reads ``RNMT_KERNELS`` and builds or loads the module under a lock, and every later
call reads one module attribute. ``with kernels.use(False): ...`` switches the kernels off
(or on) within a block, for comparisons; changing the environment variable after the first
call has no effect.

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
_switch: Optional[bool] = None  # set by `use`; None: follow RNMT_KERNELS
_built: dict = {}  # "module": the loaded extension, or None once a build has failed
# Built into one module.
SOURCES = ("bindings.cpp", "additive_scores.cpp", "gru_gates.cpp", "ln_gates.cpp", "smoothed_nll.cpp")


def _environment_allows() -> bool:
    """``RNMT_KERNELS=0`` (or off/false/no) turns the C++ kernels off."""
    return os.environ.get("RNMT_KERNELS", "1").strip().lower() not in ("0", "off", "false", "no")


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
            on = _environment_allows() if _switch is None else _switch
            if on and "module" not in _built:
                _built["module"] = _build("kernels")
            _active = _built["module"] if on else None
        return _active  # type: ignore[return-value]


@contextmanager
def use(on: bool) -> Iterator[None]:
    """Within the block the kernels are on (if they can be built) or off, whatever
    ``RNMT_KERNELS`` says; the previous choice is restored on exit."""
    global _active, _switch
    with _lock:
        before = (_active, _switch)
        _active, _switch = _UNDECIDED, bool(on)
    try:
        yield
    finally:
        with _lock:
            _active, _switch = before


STALE_LOCK_SECONDS = 600  # a build takes well under a minute; an older lock is a leftover


def _remove_stale_lock(lock: Path) -> None:
    """PyTorch serialises builds with a lock file and waits for it without limit; a build
    that was killed leaves its lock behind, which would hang every later start."""
    try:
        age = time.time() - lock.stat().st_mtime
    except OSError:
        return
    if age > STALE_LOCK_SECONDS:
        print(f"rnmt: removing a stale kernel build lock ({lock}, {age / 60:.0f} minutes old)", file=sys.stderr)
        lock.unlink(missing_ok=True)


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
        if build_dir is not None:
            _remove_stale_lock(Path(build_dir(full_name, False)) / "lock")
        module = cpp_extension.load(name=full_name, sources=sources, extra_cflags=flags,
                                    extra_ldflags=link_flags, verbose=False)
    except Exception as exc:  # no compiler, no ninja, a failed build: fall back, say so once
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"rnmt: C++ kernels unavailable ({first_line[:200]}); using PyTorch operations "
              "(same results, slower). Set RNMT_KERNELS=0 to skip the attempt.", file=sys.stderr)
        return None
    seconds = time.perf_counter() - started
    if not cached:
        print(f"rnmt: compiled the C++ {name} in {seconds:.0f} s (cached for later runs)", file=sys.stderr)
    return module
