"""Per-unit speed: one forward and backward pass over a [batch x length x size] batch.

The PyTorch built-ins ``torch-gru`` and ``torch-lstm`` (fused kernels) are timed in the same
run as reference points.
"""

from __future__ import annotations

import time
from typing import Callable, Dict, List, Sequence

import torch
from torch import Tensor, nn

from rnmt.cells import CELL_NAMES, build, run_cell
from rnmt.errors import UserError
from rnmt.fast import accelerate

BUILTINS = {"torch-gru": nn.GRU, "torch-lstm": nn.LSTM}


def _unit_pass(name: str, size: int) -> tuple[nn.Module, Callable[[Tensor, Tensor], Tensor]]:
    if name in BUILTINS:
        module = BUILTINS[name](size, size, batch_first=True)
        return module, lambda x, mask: module(x)[0]
    cell = accelerate(build(name, size, size))  # the unit as a built model runs it
    return cell, lambda x, mask: run_cell(cell, x, mask)[0]


def _one_pass(module: nn.Module, run: Callable[[Tensor, Tensor], Tensor], x: Tensor, mask: Tensor) -> float:
    start = time.perf_counter()
    run(x, mask).sum().backward()
    elapsed = time.perf_counter() - start
    module.zero_grad(set_to_none=True)
    x.grad = None
    return elapsed


def benchmark_cells(
    names: Sequence[str],
    batch: int = 64,
    length: int = 50,
    size: int = 512,
    threads: int = 2,
    repeats: int = 5,
) -> List[Dict[str, object]]:
    """Time forward + backward (loss = sum of outputs) of each unit on CPU.

    ``names`` are rnmt unit names or ``torch-gru`` / ``torch-lstm``. Units are timed round
    robin, one pass each per round after a warm-up round, so that load from other
    processes hits all of them alike; a unit's time is its best pass, the least disturbed.

    Returns one row per unit: ``{"unit", "params", "ms", "vs_gru", "vs_torch_gru"}``; the
    ratios are ``None`` when the reference unit was not timed.
    """
    for name in names:
        if name not in CELL_NAMES and name not in BUILTINS:
            valid = ", ".join(list(CELL_NAMES) + list(BUILTINS))
            raise UserError(f"unknown unit {name!r} for the benchmark (valid: {valid})")
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        x = torch.randn(batch, length, size, requires_grad=True)
        mask = torch.ones(batch, length, dtype=torch.bool)
        units = [_unit_pass(name, size) for name in names]
        best = [float("inf")] * len(names)
        for round_ in range(repeats + 1):  # round 0 warms up allocators and caches
            for i, (module, run) in enumerate(units):
                elapsed = _one_pass(module, run, x, mask)
                if round_ > 0:
                    best[i] = min(best[i], elapsed)
        rows = [
            {"unit": name, "params": sum(p.numel() for p in module.parameters()), "ms": 1000.0 * t}
            for name, (module, _), t in zip(names, units, best)
        ]
    finally:
        torch.set_num_threads(previous)
    by_name = {row["unit"]: row["ms"] for row in rows}
    for row in rows:
        row["vs_gru"] = row["ms"] / by_name["gru"] if "gru" in by_name else None
        row["vs_torch_gru"] = row["ms"] / by_name["torch-gru"] if "torch-gru" in by_name else None
    return rows


def format_rows(rows: List[Dict[str, object]]) -> str:
    """A plain-text table of `benchmark_cells` rows."""
    lines = [f"{'unit':<12}{'params':>12}{'ms fwd+bwd':>12}{'/ gru':>8}{'/ torch-gru':>13}"]
    for row in rows:
        ratio = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        lines.append(
            f"{row['unit']:<12}{row['params']:>12,}{row['ms']:>12.1f}{ratio(row['vs_gru']):>8}{ratio(row['vs_torch_gru']):>13}"
        )
    return "\n".join(lines)
