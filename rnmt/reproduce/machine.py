"""One line saying where the numbers were measured."""

from __future__ import annotations

import datetime
import os
import platform

import torch


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def describe_machine(device: torch.device, threads: int, jobs: int = 1) -> dict:
    info = {
        "cpu": cpu_model(),
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
    return (f"{where}{info['cpu']}, {info['cores']} cores available, {info['threads']} torch threads"
            f"{side_by_side}, PyTorch {info['torch']}{precision}, {info['date']}")
