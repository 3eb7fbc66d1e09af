"""One line saying where the numbers were measured."""

from __future__ import annotations

import datetime
import os
import platform

import torch


def _cpuinfo(field: str) -> str:
    """The value of the first ``field`` line of /proc/cpuinfo ("" where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine() or "unknown CPU"


def cpu_bf16(flags_text: str | None = None) -> str:
    """The processor's bf16 instructions as the kernel lists them ("" off Linux). Whether bf16
    training beats fp32 on a CPU turns on AMX, not on ``avx512_bf16`` alone
    (docs/performance.md, "bf16 training")."""
    if flags_text is None:
        flags_text = _cpuinfo("flags")
    flags = set(flags_text.split(":", 1)[-1].split())
    if not flags:
        return ""
    have = [f for f in ("avx512_bf16", "amx_bf16") if f in flags]
    if not have:
        return "no bf16 instructions"
    return " + ".join(have) + ("" if "amx_bf16" in flags else ", no AMX")


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def describe_machine(device: torch.device, threads: int, jobs: int = 1) -> dict:
    info = {
        "cpu": cpu_model(),
        "cpu_bf16": cpu_bf16(),
        "cores": usable_cores(),
        "threads": threads,
        "jobs": jobs,  # training processes running side by side
        "torch": torch.__version__,
        "device": str(device),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def machine_line(info: dict) -> str:
    where = f"GPU {info['gpu']}, " if info.get("gpu") else ""
    jobs = info.get("jobs", 1)
    side_by_side = f" per run, {jobs} runs side by side" if jobs > 1 else ""
    precision = f", {info['precision']}" if info.get("precision") else ""
    bf16 = f" ({info['cpu_bf16']})" if info.get("cpu_bf16") else ""
    return (f"{where}{info['cpu']}{bf16}, {info['cores']} cores available, {info['threads']} torch threads"
            f"{side_by_side}, PyTorch {info['torch']}{precision}, {info['date']}")
