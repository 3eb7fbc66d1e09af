"""The plan a model decodes under: the run's recorded one (``plan.json`` beside its
checkpoints) for the choices that apply to decoding, unless the user sets them.

`rnmt translate`, `rnmt serve` and `rnmt.api.load` use it. A checkpoint without a run
directory around it (or from before plans) gets the choices this machine resolves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

import torch

from rnmt.config import config_from_dict, parse_overrides
from rnmt.errors import UserError
from rnmt.plan.plan import DECODING_FIELDS, FIELDS, PLAN_FILE, ExecutionPlan, read_plan
from rnmt.plan.resolve import resolve_plan


def recorded_plan(model_path: str | Path) -> Optional[ExecutionPlan]:
    """The plan recorded by the run that ``model_path`` (a run directory or a checkpoint in
    one) comes from, or None."""
    path = Path(model_path)
    return read_plan((path if path.is_dir() else path.parent) / PLAN_FILE)


def runtime_settings(items: Sequence[str], flag: str = "--set") -> Dict[str, Any]:
    """``["runtime.KEY=VALUE", ...]`` from the command line as ``{KEY: VALUE}``; a key outside
    ``runtime.`` is a `UserError` naming it."""
    out: Dict[str, Any] = {}
    for key, value in parse_overrides(items):
        if not key.startswith("runtime.") or key.count(".") != 1:
            raise UserError(f"{flag} {key}: decoding takes runtime.* keys only (e.g. runtime.int8_kernels=onednn)")
        out[key.split(".", 1)[1]] = value
    return out


def decoding_plan(model_path: str | Path, device: torch.device,
                  runtime: Optional[Mapping[str, Any]] = None) -> ExecutionPlan:
    """The plan to decode ``model_path`` with on ``device``: the run's recorded choices for
    decoding, except the ``runtime`` keys given (checked as the config checks them)."""
    settings = dict(runtime or {})
    cfg = config_from_dict({"runtime": settings}, source="runtime settings")
    recorded = recorded_plan(model_path)
    kept = {name: c for name, c in recorded.choices().items() if name in DECODING_FIELDS} if recorded else None
    overrides = {f"runtime.{key}" for key in settings}
    if "runtime.kernels" in overrides:  # oneDNN's products are bound in the kernels
        overrides.add(FIELDS["fp32_products"][0])
    return resolve_plan(cfg, device, recorded=kept, overrides=overrides, recorded_device=device.type)
