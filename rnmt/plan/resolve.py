"""Resolving an execution plan: the config, the device, the CPU's features and the model's
sizes in, one `ExecutionPlan` out, the same for the same inputs every time.

Nothing here times anything: ``auto`` follows the CPU rules of `rnmt.hardware`, which cite
their measurements (docs/performance.md). A recorded plan (a resumed run's) is kept choice by
choice, except where the config now asks otherwise (``overrides``: the keys a ``--resume
--set`` or an edited config changed) or the device type changed.
"""

from __future__ import annotations

from typing import Any, Collection, Dict, Mapping, Optional, Tuple, Union

import torch

from rnmt import hardware, precision
from rnmt.config import Config
from rnmt.errors import UserError
from rnmt.memory import TRIM_EVERY
from rnmt.plan.plan import FIELDS, Choice, ExecutionPlan

Recorded = Union[ExecutionPlan, Mapping[str, Choice], None]
RECORDED = "recorded when the run started"


def precision_choice(amp: str, device: torch.device, hidden: int,
                     cpu: Optional[hardware.CpuFeatures] = None) -> Tuple[str, str]:
    """``train.amp`` on ``device`` for a model of ``hidden`` units: ("bf16" or "fp32", why).

    ``auto`` on a CUDA device that supports bf16 is bf16 from `precision.GPU_BF16_MIN_HIDDEN`
    units (smaller models' steps are bound by kernel launches and bf16 adds casts; measured on
    an H100, docs/performance.md "Which precision on a GPU"); on the CPU it is the rule of
    `rnmt.hardware.bf16_training`. ``bf16`` and ``none`` force the choice."""
    if amp == "none":
        return "fp32", "train.amp: none"
    if amp not in ("auto", "bf16"):
        raise UserError(f"train.amp: unknown value '{amp}'; choose auto, bf16 or none")
    if device.type == "cuda":
        gpu = torch.cuda.get_device_name(device)
        if not torch.cuda.is_bf16_supported():
            if amp == "bf16":
                raise UserError(f"train.amp is bf16 but {gpu} does not support bf16")
            return "fp32", f"{gpu} has no bf16"
        if amp == "bf16":
            return "bf16", f"train.amp: bf16, {gpu}"
        if hidden < precision.GPU_BF16_MIN_HIDDEN:
            return "fp32", (f"{gpu}: hidden size {hidden} < {precision.GPU_BF16_MIN_HIDDEN}, where bf16's casts "
                            f"cost more than its products save")
        return "bf16", f"{gpu}, hidden size {hidden}"
    if amp == "bf16":
        return "bf16", "train.amp: bf16"
    bf16, why = hardware.bf16_training(cpu or hardware.this_cpu(), hidden)
    return ("bf16" if bf16 else "fp32"), f"train.amp auto: {why}"


def _fresh(cfg: Config, device: torch.device, cpu: hardware.CpuFeatures, model: Any,
           distributed: bool) -> Dict[str, Choice]:
    """Every choice resolved from the config, the device, the CPU and the model."""
    rt, tc = cfg.runtime, cfg.train
    out: Dict[str, Choice] = {"precision": Choice(*precision_choice(tc.amp, device, cfg.model.hidden_size, cpu))}
    out["kernels"] = Choice(rt.kernels is not False, "runtime.kernels: false" if rt.kernels is False else
                            f"runtime.kernels: {str(rt.kernels).lower()}; built at first use, PyTorch's operations "
                            f"with the same results where they cannot be")
    if not out["kernels"].value:
        out["fp32_products"] = Choice("pytorch", "runtime.kernels: false; oneDNN's products are bound in the kernels")
    elif rt.fp32_products != "auto":
        out["fp32_products"] = Choice(rt.fp32_products, f"runtime.fp32_products: {rt.fp32_products}")
    else:
        onednn, why = hardware.onednn_fp32_products(cpu)
        out["fp32_products"] = Choice("onednn" if onednn else "pytorch", f"auto: {why}")
    if rt.int8_kernels != "auto":
        out["int8_kernels"] = Choice(rt.int8_kernels, f"runtime.int8_kernels: {rt.int8_kernels}")
    else:
        out["int8_kernels"] = Choice(*_auto(hardware.int8_engine(cpu)))
    out["kernel_lock_timeout"] = Choice(float(rt.kernel_lock_timeout), "runtime.kernel_lock_timeout")
    out["memory_bounds"] = Choice(rt.memory_bounds, f"runtime.memory_bounds: {str(rt.memory_bounds).lower()}")
    out["trim_every"] = (Choice(TRIM_EVERY, "the measured default (docs/performance.md, \"bf16 training\", Memory)")
                         if rt.trim_every is None else Choice(rt.trim_every, "runtime.trim_every"))
    out["heap_buffers"] = Choice(rt.heap_buffers, f"runtime.heap_buffers: {str(rt.heap_buffers).lower()}")
    out["deferred_grads"] = Choice(rt.deferred_grads, f"runtime.deferred_grads: {str(rt.deferred_grads).lower()}")
    out["gpu_fused_gru"] = Choice(rt.gpu_fused_gru, f"runtime.gpu_fused_gru: {str(rt.gpu_fused_gru).lower()}"
                                  + ("" if device.type == "cuda" else "; applies on a GPU only"))
    out.update(_step_choices(cfg, device, model, distributed, out["precision"].value == "bf16"))
    return out


def _auto(decision: Tuple[str, str]) -> Tuple[str, str]:
    return decision[0], f"auto: {decision[1]}"


def _step_choices(cfg: Config, device: torch.device, model: Any, distributed: bool,
                  bf16: bool) -> Dict[str, Choice]:
    """``train.compile_step`` and ``train.cuda_graphs``, which depend on the built model."""
    tc = cfg.train
    if model is None:  # decoding: neither applies
        return {"compile_step": Choice(False, "not training"), "cuda_graphs": Choice(False, "not training")}
    from rnmt.training import update_graphs
    from rnmt.training.setup import auto_compile_declines

    graphs, why = update_graphs.choose(tc.cuda_graphs, model, device, distributed,
                                       torch.bfloat16 if bf16 else None, tc.compile_step)
    graphs_reason = why or f"train.cuda_graphs: {str(tc.cuda_graphs).lower()}"
    if tc.cuda_graphs == "auto" and not graphs and why is None:
        graphs_reason = "train.cuda_graphs auto: not on a GPU"
    if tc.compile_step is not True and tc.compile_step is not False:  # auto
        declines = "train.cuda_graphs replays the update instead" if graphs else auto_compile_declines(model, device)
        compiled = Choice(declines is None, f"train.compile_step auto: {declines or 'compiled on this GPU'}")
    else:
        compiled = Choice(bool(tc.compile_step), f"train.compile_step: {str(tc.compile_step).lower()}")
    return {"compile_step": compiled, "cuda_graphs": Choice(graphs, graphs_reason)}


def resolve_plan(cfg: Config, device: torch.device, cpu_features: Optional[hardware.CpuFeatures] = None,
                 recorded: Recorded = None, overrides: Collection[str] = (), model: Any = None,
                 distributed: bool = False, recorded_device: Optional[str] = None) -> ExecutionPlan:
    """The plan for ``cfg`` on ``device`` and this CPU (``cpu_features``; default: read it).

    ``recorded``: a resumed run's plan (or some of its choices), kept where the config key of
    a choice is not in ``overrides`` and the device type is the one it was made for
    (``recorded_device``, default the recorded plan's). ``model``: the built model, for the
    choices that depend on it (compiled step, CUDA graphs); None when decoding."""
    cpu = cpu_features if cpu_features is not None else hardware.this_cpu()
    choices: Dict[str, Any] = _fresh(cfg, device, cpu, model, distributed)
    if isinstance(recorded, ExecutionPlan):
        recorded_device = recorded_device or recorded.device
        recorded = recorded.choices()
    if recorded and (recorded_device or device.type) == device.type:
        for name, choice in recorded.items():
            key = FIELDS[name][0]
            if key in overrides:
                choices[name] = Choice(choices[name].value, f"changed on resume: {choices[name].reason}")
            else:
                reason = choice.reason if choice.reason.startswith(RECORDED) else f"{RECORDED}: {choice.reason}"
                choices[name] = Choice(choice.value, reason)
    return ExecutionPlan(**choices, device=device.type, cpu=cpu.to_dict())


def slow_bf16_warning(plan: ExecutionPlan, cpu: hardware.CpuFeatures) -> Optional[str]:
    """A warning when a CPU run trains in bf16 (recorded when a resumed run started elsewhere,
    or forced by ``train.amp: bf16``) on a CPU whose bf16 products are not faster than fp32's
    (`hardware.bf16_training`'s processor rules); None otherwise."""
    if plan.device != "cpu" or not plan.bf16:
        return None
    fast, why = hardware.bf16_training(cpu, 1 << 20)  # the processor's rule alone, whatever the width
    if fast:
        return None
    return (f"warning: training in bf16 ({plan.precision.reason}), but {why}: fp32 is likely faster on this "
            f"CPU; --set train.amp=none trains in fp32 (with --resume, a different computation from the update "
            f"it resumes at)")
