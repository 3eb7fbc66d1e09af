"""Mixed precision: how train.amp resolves on the CPU and on a GPU, and the bf16 speed probe."""

import pytest
import torch

from rnmt import precision, products
from rnmt.errors import UserError
from rnmt.training.trainer import amp_dtype, resolve_amp


def test_amp_resolution_on_cpu(monkeypatch):
    cpu = torch.device("cpu")
    assert amp_dtype("none", cpu, hidden=512) is None
    assert amp_dtype("bf16", cpu) is torch.bfloat16
    with pytest.raises(UserError, match="train.amp"):
        amp_dtype("fp8", cpu)
    # auto asks the measurement, and only for models wide enough to gain
    speed = {"x": 2.2}
    monkeypatch.setattr(precision, "cpu_bf16_speedup", lambda hidden: speed["x"])
    assert amp_dtype("auto", cpu, hidden=256) is torch.bfloat16
    assert amp_dtype("auto", cpu, hidden=precision.BF16_MIN_HIDDEN - 1) is None
    speed["x"] = 0.58  # a CPU whose bf16 products are slower than fp32 ones
    assert amp_dtype("auto", cpu, hidden=256) is None
    dtype, why = resolve_amp("auto", cpu, hidden=256)
    assert dtype is None and "0.58x" in why


def test_the_cpu_bf16_probe_measures_a_ratio_on_one_thread(monkeypatch):
    # one thread whatever the training's count: on a busy machine a multi-threaded product
    # waits for its slowest thread, and the ratio moved from 1.44x to 6x between probes
    products.active()  # fp32's library chosen first: that choice times on one thread too
    counts, set_threads = [], torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (counts.append(n), set_threads(n)))
    before = torch.get_num_threads()
    speedup = precision.cpu_bf16_speedup.__wrapped__(128)  # not the cached value
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
