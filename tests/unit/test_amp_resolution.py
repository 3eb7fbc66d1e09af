"""Mixed precision: how train.amp resolves on the CPU and on a GPU, and the bf16 speed probe
(a benchmark's measurement now, not the choice)."""

import pytest
import torch

from rnmt import hardware, precision, products
from rnmt.errors import UserError
from rnmt.training.trainer import amp_dtype, resolve_amp


def test_amp_resolution_on_cpu(monkeypatch):
    """auto follows the CPU rule (rnmt.hardware.bf16_training): no timing, the same answer at
    every start, with the rule's reason."""
    cpu = torch.device("cpu")
    assert amp_dtype("none", cpu, hidden=512) is None
    assert amp_dtype("bf16", cpu) is torch.bfloat16
    with pytest.raises(UserError, match="train.amp"):
        amp_dtype("fp8", cpu)
    zen4 = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "avx512f", "avx512_bf16"}))
    monkeypatch.setattr(hardware, "this_cpu", lambda: zen4)
    assert amp_dtype("auto", cpu, hidden=256) is torch.bfloat16
    assert amp_dtype("auto", cpu, hidden=hardware.BF16_MIN_HIDDEN - 1) is None
    xeon = hardware.CpuFeatures("GenuineIntel", frozenset({"avx512f", "avx512_bf16"}))  # no AMX
    monkeypatch.setattr(hardware, "this_cpu", lambda: xeon)
    dtype, why = resolve_amp("auto", cpu, hidden=256)
    assert dtype is None and "0.46-0.83x" in why


def test_the_cpu_rule_for_bf16_follows_the_measured_classes():
    """docs/performance.md, "CPU classes": AVX2 only fp32; AMD with avx512_bf16 bf16; a Xeon
    with AMX bf16 from 512 units only; every choice says why."""
    amd = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "avx512f", "avx512_bf16"}))
    avx2 = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "fma"}))
    amx = hardware.CpuFeatures("GenuineIntel", frozenset({"avx512f", "avx512_bf16", "amx_bf16", "amx_int8"}))
    cases = [(amd, 256, True), (amd, 64, False), (avx2, 512, False), (amx, 256, False), (amx, 512, True),
             (amx, 1024, True), (hardware.CpuFeatures(), 512, False)]
    for cpu, hidden, bf16 in cases:
        got, why = hardware.bf16_training(cpu, hidden)
        assert got is bf16 and why, (cpu, hidden)
        assert hardware.bf16_training(cpu, hidden) == (got, why)  # deterministic


def test_the_bf16_probe_measures_a_ratio_on_one_thread(monkeypatch):
    # kept for benchmarks/amp_probe.py: one thread whatever the training's count (on a busy
    # machine a multi-threaded product waits for its slowest thread)
    products.active()  # fp32's library chosen first
    counts, set_threads = [], torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (counts.append(n), set_threads(n)))
    before = torch.get_num_threads()
    speedup = precision.batch_speedup(128)
    assert speedup == 0.0 or 0.05 < speedup < 50  # a ratio of two timings, or no bf16 products
    assert speedup == 0.0 or counts == [1, before]  # measured on one thread, the count restored
    assert torch.get_num_threads() == before


def test_amp_resolution_on_a_gpu(monkeypatch):
    """On a GPU `auto` picks bf16 only for models as wide as the papers' (measured: below,
    fp32 trains faster there); ``bf16`` forces it; a GPU without bf16 refuses ``bf16``."""
    gpu = torch.device("cuda", 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Test GPU")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert amp_dtype("auto", gpu, hidden=precision.GPU_BF16_MIN_HIDDEN) is torch.bfloat16
    dtype, why = resolve_amp("auto", gpu, hidden=512)
    assert dtype is None and "512" in why and "Test GPU" in why
    assert amp_dtype("bf16", gpu, hidden=512) is torch.bfloat16
    assert amp_dtype("none", gpu, hidden=2048) is None
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert amp_dtype("auto", gpu, hidden=2048) is None
    with pytest.raises(UserError, match="does not support bf16"):
        amp_dtype("bf16", gpu, hidden=2048)


def test_the_cpu_bf16_probe_meets_new_shapes_without_a_warm_up(monkeypatch):
    """Training meets a new product shape at every update, and oneDNN builds a kernel for each
    (milliseconds on a CPU with AMX): the probe must time those builds, so each round's bf16
    products are at a row count of their own and no untimed call comes first."""
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        pytest.skip("no bf16 products on this CPU")
    shapes, mm = [], torch.mm
    def recording(a, b):
        if a.dtype == torch.bfloat16:
            shapes.append(tuple(a.shape))
        return mm(a, b)

    monkeypatch.setattr(torch, "mm", recording)
    rows = (37, 43)
    torch.manual_seed(5)
    assert precision.batch_speedup(64, rows) > 0
    after = torch.rand(1)
    torch.manual_seed(5)
    assert torch.equal(after, torch.rand(1))  # its own generator: a seeded run's numbers stay as they were
    steps = precision.PROBE_STEPS
    assert shapes == [s for r in rows for s in [(steps * r, 64)] + [(r, 64)] * steps]
