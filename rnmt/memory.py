"""Bounds on the memory a long CPU process keeps after it has freed it.

Training and decoding meet batches of many shapes (token budgets give every batch its own
sentence count and length). Two caches grow with the number of shapes seen, and the
process's resident set with them, although nothing in them is in use:

- **oneDNN's primitive cache.** Every bf16 matrix product on the CPU runs a oneDNN
  primitive compiled for its exact shape, kept (with its buffers) in a cache of 1,024
  entries by default. One training update uses a few dozen product shapes; the cache holds
  those of dozens of earlier batches. `PRIMITIVE_CACHE` entries keep every shape that
  repeats within an update (a recurrent step's products, once per time step, one after
  the other); a new batch's shapes are new to any small cache. oneDNN reads the bound when
  it makes its first primitive, so `configure_process` runs before any product (the CLI
  calls it first); a value the user set in ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` wins.
- **The C library's heap.** glibc serves large buffers from its heap once its adaptive mmap
  threshold has grown past them, and freed heap pages stay resident. `trim` hands the free
  pages back (``malloc_trim``); the trainer calls it after every `TRIM_EVERY`-th update
  (``runtime.trim_every`` overrides it; 0: never), between updates, where almost nothing is
  alive, so what piles up between updates is bounded (`PeriodicTrim`). In bf16 the pile
  grows by about 50 MiB an update (the primitives made and evicted for each batch's new
  shapes leave the heap fragmented): trimming after every update brings training's peak RSS
  to about 1.3x fp32's but costs about a fifth of bf16's speed (docs/performance.md, "bf16 training").

One setting goes the other way, trading memory for speed: **large buffers from the heap**
(`heap_buffers`, the plan's ``runtime.heap_buffers``). glibc's adaptive mmap threshold grows
only to 32 MiB, and a buffer above it is a fresh mapping whose pages fault in at first touch
and go back to the system when it is freed. A training update's largest buffers are above
it (the output layer's [tokens x V] scores and their gradient: 92 MiB each at 3,000 tokens
and V = 8,000 in fp32), so every update paid their page faults again: 41 of the label-
smoothed loss's 47 ms backward pass, one thread. With the threshold fixed at
`HEAP_BUFFERS_UP_TO` (and the heap's automatic trimming of its top raised with it) those
buffers come from the heap and are reused from update to update; the periodic trim above
still hands the free pages back every `TRIM_EVERY` updates. Measured in
docs/precision.md ("Large buffers from the heap"). A threshold the user set
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``GLIBC_TUNABLES``) is left alone.

``runtime.memory_bounds: false`` turns both bounds off, through the execution plan (`configure`;
for comparisons: benchmarks/shape_rss.py). The
figures that chose these settings are in docs/performance.md ("bf16 training", Memory).
Less memory than these bounds give is bought with speed, and set in the environment before
the process starts, not here: a fixed ``MALLOC_MMAP_THRESHOLD_`` with PyTorch's
``THP_MEM_ALLOC_ENABLE=1`` (docs/performance.md, "bf16 on ... Zen 5", for a user short of
memory).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from typing import Optional

# oneDNN primitives kept; sized by measurement (docs/performance.md, "bf16 training" and "An
# Intel Xeon with AMX"): 64 held bf16 training's peak 200 MiB below 256 at the same speed on an
# AVX-512 bf16 EPYC, and 8 another 9-10% below 64 there and on an AMX Xeon, where the
# creations come from each batch's new shapes, not from a step's shapes evicting each other
PRIMITIVE_CACHE = 8
# updates between heap trims in training (`PeriodicTrim`); sized by measurement too
TRIM_EVERY = 10
_ENV_CACHE = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
_bounded = True  # the process's choice (`configure`)
_trim_every = TRIM_EVERY
_set_here = False  # whether `configure_process` wrote the cache's capacity (not the user)
# buffers up to this size come from glibc's heap when `heap_buffers` is on
HEAP_BUFFERS_UP_TO = 1 << 30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (glibc's malloc.h)
_GLIBC_THRESHOLDS = 128 * 1024  # glibc's initial mmap and trim thresholds
_USER_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
_heap = True  # the process's choice (`configure`)
_heap_set: Optional[bool] = None  # what `heap_buffers` last set in glibc (None: nothing yet)


def enabled() -> bool:
    return _bounded


def configure(bounds: bool, trim_every: int = TRIM_EVERY, heap: bool = True) -> None:
    """The execution plan's memory choices: both bounds on or off, the updates between heap
    trims, and large buffers from the heap (`heap_buffers`). Turning the bounds off takes
    back the cache capacity `configure_process` set, which oneDNN reads at its first
    primitive: effective before that only."""
    global _bounded, _trim_every, _set_here, _heap
    _bounded, _trim_every, _heap = bool(bounds), int(trim_every), bool(heap)
    if not _bounded and _set_here:
        os.environ.pop(_ENV_CACHE, None)
        _set_here = False
    configure_process()


def configure_process() -> None:
    """Bound oneDNN's primitive cache, unless the user chose a capacity or the bounds are
    off (effective only before the process's first oneDNN primitive), and set the heap's
    thresholds to the process's `heap_buffers` choice."""
    global _set_here
    if _bounded and _ENV_CACHE not in os.environ and "DNNL_PRIMITIVE_CACHE_CAPACITY" not in os.environ:
        os.environ[_ENV_CACHE] = str(PRIMITIVE_CACHE)
        _set_here = True
    heap_buffers(_heap)


def heap_buffers(on: bool) -> bool:
    """Serve buffers up to `HEAP_BUFFERS_UP_TO` from glibc's heap, reused after they are
    freed (on), or go back to glibc's initial thresholds (off: fixed at 128 KiB, no longer
    adaptive, once this has turned them on). Returns whether glibc's thresholds are rnmt's
    to set: not where the C library is not glibc or the user set them in the environment."""
    global _heap_set
    libc = _glibc()
    if libc is None or any(name in os.environ for name in _USER_MALLOC_ENV):
        return False
    if on == _heap_set or (not on and _heap_set is None):  # nothing to change (off: glibc's own)
        return True
    threshold = HEAP_BUFFERS_UP_TO if on else _GLIBC_THRESHOLDS
    # the trim threshold above the mmap threshold: a freed buffer at the heap's top stays
    libc.mallopt(_M_MMAP_THRESHOLD, threshold)
    libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1 if on else _GLIBC_THRESHOLDS)
    _heap_set = on
    return True


@functools.cache
def _glibc() -> Optional[ctypes.CDLL]:
    """The C library when it is glibc (``malloc_trim`` is a glibc function), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
    except (OSError, AttributeError):
        return None
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    return libc


def trim_every() -> int:
    """Updates between heap trims (0: never): the plan's ``trim_every``, else `TRIM_EVERY`."""
    return _trim_every


def trim() -> bool:
    """Return the heap's free pages to the system; False where that is not possible (not
    glibc) or the bounds are off."""
    libc = _glibc() if enabled() else None
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class PeriodicTrim:
    """Calls `trim` after every ``every``-th update (0: never). Trimming costs the next
    update the page faults of re-touching what it frees, so the period trades that time
    against how far freed pages may pile up between trims."""

    def __init__(self, every: Optional[int] = None) -> None:
        self.every = trim_every() if every is None else every
        self._count = 0

    def after_update(self) -> bool:
        if self.every <= 0:
            return False
        self._count += 1
        if self._count % self.every:
            return False
        return trim()
