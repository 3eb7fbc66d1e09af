"""The execution plan: deterministic resolution with reasons, the JSON form and its errors,
a recorded plan's reuse, and no environment variable choosing the computation."""

from __future__ import annotations

import re

import pytest
import torch

from rnmt import hardware
from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.plan import FIELDS, PLAN_VERSION, Choice, ExecutionPlan, resolve_plan
from tests.support import REPO

CPU = torch.device("cpu")
ZEN4 = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni"}))
AMX = hardware.CpuFeatures("GenuineIntel", frozenset({"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8"}))
AVX2 = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "fma"}))


def config(hidden: int = 256, **runtime):
    return config_from_dict({"model": {"hidden_size": hidden}, "runtime": runtime})


def test_the_same_inputs_give_the_same_plan_with_a_reason_for_every_choice():
    for cpu in (ZEN4, AMX, AVX2):
        first, second = resolve_plan(config(), CPU, cpu), resolve_plan(config(), CPU, cpu)
        assert first == second and first.to_dict() == second.to_dict()
        assert set(first.choices()) == set(FIELDS)
        assert all(choice.reason.strip() for choice in first.choices().values())
        assert len(first.describe()) == len(FIELDS) + 1


def test_each_cpu_class_gets_its_measured_choices():
    zen4, amx, avx2 = (resolve_plan(config(hidden), CPU, cpu) for cpu, hidden in ((ZEN4, 256), (AMX, 256), (AVX2, 512)))
    assert (zen4.precision.value, zen4.fp32_products.value, zen4.int8_kernels.value) == ("bf16", "onednn", "fbgemm")
    assert (amx.precision.value, amx.fp32_products.value, amx.int8_kernels.value) == ("fp32", "pytorch", "onednn")
    assert resolve_plan(config(512), CPU, AMX).precision.value == "bf16"  # AMX pays from 512 units
    assert (avx2.precision.value, avx2.fp32_products.value) == ("fp32", "pytorch")
    assert "amx_bf16" in amx.precision.reason and "512" in amx.precision.reason


def test_config_keys_decide_over_the_cpu_rules():
    plan = resolve_plan(config(fp32_products="pytorch", int8_kernels="onednn", trim_every=3, memory_bounds=False),
                        CPU, ZEN4)
    assert plan.fp32_products == Choice("pytorch", "runtime.fp32_products: pytorch")
    assert plan.int8_kernels.value == "onednn" and plan.trim_every.value == 3 and plan.memory_bounds.value is False
    off = resolve_plan(config(kernels=False, fp32_products="onednn"), CPU, ZEN4)
    assert off.kernels.value is False and off.fp32_products.value == "pytorch"  # oneDNN's products live in the kernels
    assert resolve_plan(config_from_dict({"train": {"amp": "none"}}), CPU, ZEN4).precision.value == "fp32"


def test_environment_variables_no_longer_change_the_plan(monkeypatch):
    before = resolve_plan(config(), CPU, ZEN4)
    for name, value in [("RNMT_ONEDNN_PRODUCTS", "0"), ("RNMT_KERNELS", "0"), ("RNMT_INT8_KERNELS", "onednn"),
                        ("RNMT_TRIM_EVERY", "1"), ("RNMT_MEMORY_BOUNDS", "0"), ("RNMT_KERNEL_LOCK_TIMEOUT", "1")]:
        monkeypatch.setenv(name, value)
    assert resolve_plan(config(), CPU, ZEN4) == before


def test_the_package_reads_no_rnmt_variable_but_the_api_key_and_the_commit():
    """Computation is chosen by config keys; the two variables left are the server's key (read
    by the serving code both services share, in rnmt_runtime) and a reproduction record's
    commit (provenance, where no git directory is)."""
    read = set()
    for path in [*(REPO / "rnmt").rglob("*.py"), *(REPO / "rnmt_runtime").rglob("*.py")]:
        read |= set(re.findall(r"""environ(?:\.get)?[\[(]\s*["'](RNMT_\w+)""", path.read_text(encoding="utf-8")))
    assert read == {"RNMT_API_KEY", "RNMT_COMMIT"}


def test_the_plan_round_trips_through_its_dict():
    plan = resolve_plan(config(), CPU, AMX)
    again = ExecutionPlan.from_dict(plan.to_dict())
    assert again == plan and again.cpu == plan.cpu and again.describe() == plan.describe()


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(extra=1), "unknown plan key 'extra'"),
    (lambda d: d["choices"].update(turbo={"value": True, "reason": "x"}), "unknown plan choice 'turbo'"),
    (lambda d: d["choices"]["precision"].update(value="fp16"), "plan choice 'precision' must be fp32 or bf16"),
    (lambda d: d["choices"]["trim_every"].update(value=-1), "'trim_every' must be a whole number"),
    (lambda d: d["choices"]["kernels"].update(value="yes"), "'kernels' must be true or false"),
    (lambda d: d["choices"].pop("cuda_graphs"), "the plan has no 'cuda_graphs'"),
    (lambda d: d.update(version=PLAN_VERSION + 1), "newer than this rnmt reads"),
    (lambda d: d.update(version="1"), "'version' must be a whole number"),
])
def test_a_damaged_plan_is_a_one_line_error_naming_the_field(change, message):
    raw = resolve_plan(config(), CPU, ZEN4).to_dict()
    change(raw)
    with pytest.raises(UserError, match=re.escape(message)) as caught:
        ExecutionPlan.from_dict(raw, "run/plan.json")
    assert str(caught.value).startswith("run/plan.json: ") and "\n" not in str(caught.value)


def test_a_recorded_plan_is_kept_on_another_cpu_unless_a_key_is_overridden():
    recorded = resolve_plan(config(), CPU, ZEN4)
    resumed = resolve_plan(config(), CPU, AVX2, recorded=recorded)  # the machine lost AVX-512
    assert resumed.precision.value == "bf16" and resumed.fp32_products.value == "onednn"
    assert resumed.precision.reason.startswith("recorded when the run started: train.amp auto")
    again = resolve_plan(config(), CPU, AVX2, recorded=resumed)
    assert again.precision.reason == resumed.precision.reason  # not wrapped twice
    changed = resolve_plan(config(fp32_products="pytorch"), CPU, AVX2, recorded=recorded,
                           overrides={"runtime.fp32_products"})
    assert changed.fp32_products.value == "pytorch" and changed.fp32_products.reason.startswith("changed on resume")
    assert changed.precision.value == "bf16"  # the others as recorded
    on_gpu_before = resolve_plan(config(), CPU, AVX2, recorded=recorded, recorded_device="cuda")
    assert on_gpu_before.precision.value == "fp32"  # another device type: resolved anew


def test_the_cpu_features_come_from_cpuinfo():
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 avx512f avx512_bf16\n\nprocessor\t: 1\n"
    cpu = hardware.parse_cpuinfo(text)
    assert cpu == hardware.CpuFeatures("AuthenticAMD", frozenset({"fpu", "avx2", "avx512f", "avx512_bf16"}))
    assert cpu.to_dict() == {"vendor": "AuthenticAMD", "flags": ["avx2", "avx512_bf16", "avx512f"]}
    assert hardware.parse_cpuinfo("") == hardware.CpuFeatures()
