"""Mixed precision: how train.amp resolves on the CPU and on a GPU, and the bf16 speed probe."""

import pytest
import torch

from rnmt import precision
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
