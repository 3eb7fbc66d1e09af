"""rnmt.memory: the bound on oneDNN's primitive cache and the heap trimming."""

from __future__ import annotations

import os
import sys

import pytest
import torch

from rnmt import memory

glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux") or memory._glibc() is None,
                                reason="malloc_trim is a glibc function")


def resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.fixture(autouse=True)
def default_bounds():
    """Each test starts with the default bounds, and leaves them so."""
    memory.configure(True, memory.TRIM_EVERY)
    yield
    memory.configure(True, memory.TRIM_EVERY)


def test_configure_process_bounds_the_cache_unless_told_otherwise(monkeypatch):
    for name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "DNNL_PRIMITIVE_CACHE_CAPACITY"):
        monkeypatch.delenv(name, raising=False)
    memory.configure_process()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == str(memory.PRIMITIVE_CACHE)
    # the user's own choice, under either of oneDNN's names, wins
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "7")
    memory.configure_process()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "7"
    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")
    monkeypatch.setenv("DNNL_PRIMITIVE_CACHE_CAPACITY", "9")
    memory.configure_process()
    assert "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in os.environ
    monkeypatch.delenv("DNNL_PRIMITIVE_CACHE_CAPACITY")
    memory.configure_process()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == str(memory.PRIMITIVE_CACHE)
    memory.configure(False)  # the plan's runtime.memory_bounds: false takes back what rnmt set
    assert "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in os.environ
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "5")
    memory.configure(False)  # and leaves the user's own
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "5"


@glibc_only
def test_trim_returns_freed_heap_pages(monkeypatch):
    memory.trim()
    # 64 KB tensors come from the heap (below glibc's mmap threshold); freeing every other
    # one leaves holes between live blocks, which free() cannot hand back by itself
    blocks = [torch.empty(16_000).fill_(1.0) for _ in range(2_000)]
    kept = blocks[1::2]
    del blocks
    before = resident_mib()
    assert memory.trim()
    after = resident_mib()
    assert before - after > 40, (before, after)  # 61 MiB were freed
    assert all(float(k[0]) == 1.0 for k in kept)


def test_trim_off(monkeypatch):
    memory.configure(False)
    monkeypatch.setenv("RNMT_MEMORY_BOUNDS", "1")  # the variable of earlier versions decides nothing
    assert memory.trim() is False


def test_periodic_trim_counts_updates(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "trim", lambda: calls.append(1) or True)
    trimmer = memory.PeriodicTrim(every=3)
    done = [trimmer.after_update() for _ in range(7)]
    assert done == [False, False, True, False, False, True, False] and len(calls) == 2
    assert memory.PeriodicTrim(every=0).after_update() is False


def test_trim_period_from_the_plan(monkeypatch):
    """The plan's ``trim_every`` (``runtime.trim_every``) sets the trainer's trim period (0:
    never); ``RNMT_TRIM_EVERY`` of earlier versions changes nothing."""
    assert memory.PeriodicTrim().every == memory.TRIM_EVERY
    monkeypatch.setenv("RNMT_TRIM_EVERY", "1")
    assert memory.PeriodicTrim().every == memory.TRIM_EVERY
    memory.configure(True, 1)
    assert memory.PeriodicTrim().every == 1
    memory.configure(True, 0)
    assert memory.PeriodicTrim().after_update() is False


def _faults_of_a_reused_large_buffer() -> int:
    """Minor page faults of filling a 96 MiB malloc'd buffer after one of the same size was
    filled and freed (glibc's malloc itself: PyTorch's aligned allocations reuse freed
    buffers too, but where depends on what else the heap holds)."""
    import ctypes
    import resource

    libc = memory._glibc()
    assert libc is not None
    libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    size = 96 * 2**20
    first = libc.malloc(size)
    ctypes.memset(first, 1, size)
    libc.free(first)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    second = libc.malloc(size)
    ctypes.memset(second, 2, size)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    libc.free(second)
    return faults


@glibc_only
def test_heap_buffers_reuse_a_large_freed_buffer_instead_of_faulting_it_in_again(monkeypatch):
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    assert memory.heap_buffers(True)
    assert memory.heap_buffers(False)  # glibc's initial thresholds: a fresh mapping each time
    mapped = _faults_of_a_reused_large_buffer()
    assert memory.heap_buffers(True)
    reused = _faults_of_a_reused_large_buffer()
    assert mapped > 20_000 and reused < 1_000, (mapped, reused)  # 24,576 pages of 4 KiB


def test_heap_buffers_leave_the_users_thresholds_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert memory.heap_buffers(True) is False


def test_the_plan_chooses_heap_buffers(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "heap_buffers", lambda on: calls.append(on) or True)
    memory.configure(True, memory.TRIM_EVERY, heap=False)
    memory.configure(False, memory.TRIM_EVERY, heap=True)
    assert calls == [False, True]
