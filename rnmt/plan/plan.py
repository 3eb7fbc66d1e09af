"""The execution plan: every choice of how a run computes, each with the reason it was made.

A plan says *how* the computation runs (precision, whose fp32 and int8 products, rnmt's C++
kernels, the compiled step, CUDA graphs, memory bounds), never *what* it computes: a model
trained under one plan loads under any other. It is resolved once (`rnmt.plan.resolve`),
logged, saved with the training state and beside the checkpoints (``plan.json``), and
applied to the process and the model (`rnmt.plan.apply`). A resumed run and `rnmt translate`
reuse the recorded plan, so a resumed run sums in the order it started with.

On disk a plan is plain JSON (`to_dict`, `from_dict`): a version, the device and CPU it was
resolved for, and each choice's value and reason. `from_dict` refuses unknown fields and
invalid values with a one-line `UserError` naming the field.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from rnmt.errors import UserError

PLAN_VERSION = 1
PLAN_FILE = "plan.json"  # beside a run's checkpoints


@dataclass(frozen=True)
class Choice:
    """One decision: its value and why (``config``, a CPU rule, the recorded plan, ...)."""

    value: Any
    reason: str


def _one_of(*names: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v in names


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _seconds(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < float("inf")


# field -> (the config key that chooses it, what a valid value is, how the error says it)
FIELDS: Dict[str, Tuple[str, Callable[[Any], bool], str]] = {
    "precision": ("train.amp", _one_of("fp32", "bf16"), "fp32 or bf16"),
    "fp32_products": ("runtime.fp32_products", _one_of("onednn", "pytorch"), "onednn or pytorch"),
    "int8_kernels": ("runtime.int8_kernels", _one_of("fbgemm", "onednn"), "fbgemm or onednn"),
    "kernels": ("runtime.kernels", _is_bool, "true or false"),
    "kernel_lock_timeout": ("runtime.kernel_lock_timeout", _seconds, "a number of seconds of at least 0"),
    "compile_step": ("train.compile_step", _is_bool, "true or false"),
    "cuda_graphs": ("train.cuda_graphs", _is_bool, "true or false"),
    "memory_bounds": ("runtime.memory_bounds", _is_bool, "true or false"),
    "trim_every": ("runtime.trim_every", _count, "a whole number of updates of at least 0"),
    "heap_buffers": ("runtime.heap_buffers", _is_bool, "true or false"),
    "deferred_grads": ("runtime.deferred_grads", _is_bool, "true or false"),
    "gpu_fused_gru": ("runtime.gpu_fused_gru", _is_bool, "true or false"),
}
# The choices that decoding uses (`rnmt translate`, the API, the server).
DECODING_FIELDS = ("fp32_products", "int8_kernels", "kernels", "kernel_lock_timeout", "memory_bounds",
                   "heap_buffers", "gpu_fused_gru")
# Choices added after plans were first written, with the value a plan without them gets.
ADDED_LATER = {"heap_buffers": True}


@dataclass(frozen=True)
class ExecutionPlan:
    """Every speed choice of a run (see the module docstring); build with `resolve_plan`."""

    precision: Choice  # "fp32" or "bf16": the autocast dtype of training
    fp32_products: Choice  # "onednn" or "pytorch": fp32 CPU matrix products (rnmt.products)
    int8_kernels: Choice  # "fbgemm" or "onednn": int8 decoding's kernels (rnmt.int8)
    kernels: Choice  # rnmt's fused C++ kernels allowed (built at first use)
    kernel_lock_timeout: Choice  # seconds a build waits for another process's
    compile_step: Choice  # teacher forcing's decoder step through torch.compile
    cuda_graphs: Choice  # each update replayed from CUDA graphs
    memory_bounds: Choice  # oneDNN's primitive cache bounded, the heap trimmed (rnmt.memory)
    trim_every: Choice  # updates between heap trims (0: never)
    heap_buffers: Choice  # large buffers from glibc's heap, reused between updates (rnmt.memory)
    deferred_grads: Choice  # one weight-gradient accumulation per pass (rnmt.deferred_grads)
    gpu_fused_gru: Choice  # the GRU through PyTorch's fused CUDA cell and cuDNN on a GPU
    device: str = "cpu"  # the device type it was resolved for
    cpu: Dict[str, Any] = field(default_factory=dict, compare=False)  # rnmt.hardware.CpuFeatures.to_dict()
    version: int = PLAN_VERSION

    def choices(self) -> Dict[str, Choice]:
        return {name: getattr(self, name) for name in FIELDS}

    def describe(self) -> List[str]:
        """The plan as log lines: one heading, then one line per choice with its reason."""
        flags = " ".join(self.cpu.get("flags", [])) or "no flags read"
        lines = [f"execution plan ({self.device}; CPU {self.cpu.get('vendor') or 'unknown'}: {flags}):"]
        for name, choice in self.choices().items():
            value = str(choice.value).lower() if isinstance(choice.value, bool) else choice.value
            lines.append(f"  {name}: {value} ({choice.reason})")
        return lines

    def to_dict(self) -> Dict[str, Any]:
        return {"version": self.version, "device": self.device, "cpu": dict(self.cpu),
                "choices": {name: {"value": c.value, "reason": c.reason} for name, c in self.choices().items()}}

    @classmethod
    def from_dict(cls, raw: Any, source: str = "plan") -> ExecutionPlan:
        """A plan from `to_dict`'s form; anything else is a one-line `UserError` naming ``source``."""
        choices: Dict[str, Any] = choices_from_dict(raw, source)
        for name, value in ADDED_LATER.items():
            choices.setdefault(name, Choice(value, "the default (the plan was written before this choice existed)"))
        missing = [name for name in FIELDS if name not in choices]
        if missing:
            raise UserError(f"{source}: the plan has no '{missing[0]}'")
        return cls(**choices, device=str(raw.get("device", "cpu")), cpu=dict(raw.get("cpu") or {}))

    def replace(self, **changes: Any) -> ExecutionPlan:
        return dataclasses.replace(self, **changes)

    def apply(self, model: Any = None) -> Any:
        """Set the process's switches to this plan and, given a model, swap its fast variants
        in (`rnmt.plan.apply`); returns the model."""
        from rnmt.plan.apply import apply_plan

        return apply_plan(self, model)

    @property
    def bf16(self) -> bool:
        return self.precision.value == "bf16"


def choices_from_dict(raw: Any, source: str) -> Dict[str, Choice]:
    """The checked choices of a plan dict (all or some of `FIELDS`)."""
    if not isinstance(raw, dict):
        raise UserError(f"{source}: a plan must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {"version", "device", "cpu", "choices"})
    if unknown:
        raise UserError(f"{source}: unknown plan key '{unknown[0]}'")
    version = raw.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"{source}: plan 'version' must be a whole number of at least 1, got {version!r}")
    if version > PLAN_VERSION:
        raise UserError(f"{source}: plan version {version} is newer than this rnmt reads ({PLAN_VERSION})")
    entries = raw.get("choices")
    if not isinstance(entries, dict):
        raise UserError(f"{source}: plan 'choices' must be a mapping")
    out: Dict[str, Choice] = {}
    for name, entry in entries.items():
        if name not in FIELDS:
            raise UserError(f"{source}: unknown plan choice '{name}'; known: {', '.join(FIELDS)}")
        if not isinstance(entry, dict) or set(entry) != {"value", "reason"}:
            raise UserError(f"{source}: plan choice '{name}' must be a mapping of value and reason")
        _, valid, expected = FIELDS[name]
        if not valid(entry["value"]) or not isinstance(entry["reason"], str):
            raise UserError(f"{source}: plan choice '{name}' must be {expected}, got {entry['value']!r}")
        out[name] = Choice(entry["value"], entry["reason"])
    return out


def write_plan(plan: ExecutionPlan, path: Path) -> None:
    """``plan`` as ``path`` (JSON), written atomically."""
    from rnmt.training.checkpoint import atomic_write_text

    atomic_write_text(path, json.dumps(plan.to_dict(), indent=1) + "\n")


def read_plan(path: Path) -> Optional[ExecutionPlan]:
    """The plan saved in ``path``, None when there is no such file; a damaged one is a `UserError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({(exc.strerror or str(exc)).lower()})") from None
    try:
        raw = json.loads(text)
    except ValueError:
        raise UserError(f"{path}: not a JSON plan") from None
    return ExecutionPlan.from_dict(raw, str(path))
