"""Time the units' element-wise C++ sweeps (rnmt/kernels/gru_gates.cpp, ln_gates.cpp) on CPU.

    python -m benchmarks.gates_kernel                          # this checkout's build, 1 thread
    python -m benchmarks.gates_kernel --extension OLD.so       # and an older build beside it

Each sweep is timed with and without the candidate's dropout mask. The two should cost about
the same: the sweep's arithmetic is the same and the mask adds one read per element. A build
in which the unmasked sweep is several times slower than the masked one has a vectorised loop
reading through a null pointer under an all-false mask (docs/cpu-speed.md, "A null pointer
in a vectorised loop"). ``--extension`` loads another build of the same kernels (a .so from
torch's extension cache, e.g. one built from an older commit) and times it in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, List

import torch

from rnmt import kernels


def load_build(path: Path) -> ModuleType:
    """A kernel build from its .so (the module name is the file's stem)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: {path} is not a loadable extension")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_us(call: Callable[[], object], repeats: int, rounds: int) -> float:
    """Median over ``rounds`` of the mean microseconds per call over ``repeats`` calls; NaN
    for a call the build does not support (an older build given bf16 products)."""
    try:
        call()
    except RuntimeError:
        return float("nan")
    for _ in range(max(10, repeats // 20)):
        call()
    means = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        means.append((time.perf_counter() - start) / repeats * 1e6)
    return statistics.median(means)


def sweeps(ext: ModuleType, rows: int, d: int) -> Dict[str, Callable[[], object]]:
    """The calls to time, each on fixed random inputs of ``rows`` x ``d`` units."""
    g = torch.Generator().manual_seed(0)
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    h, grad = r(rows, d), r(rows, d)
    mask = (torch.rand(rows, d, generator=g) > 0.1).float() / 0.9
    px, rec = r(rows, 3 * d), r(rows, 3 * d)
    calls: Dict[str, Callable[[], object]] = {}
    for label, m in (("no mask", None), ("mask", mask)):
        _, saved = ext.gru_gates_forward(px, rec, h, m)
        calls[f"GRU forward, {label}"] = lambda m=m: ext.gru_gates_forward(px, rec, h, m)
        calls[f"GRU backward, {label}"] = lambda m=m, saved=saved: ext.gru_gates_backward(grad, h, saved, m)
    # bf16 products, as CPU bf16 autocast gives them (read directly since 270aabd)
    px16, rec16 = px.bfloat16(), rec.bfloat16()
    calls["GRU forward, bf16 products, no mask"] = lambda: ext.gru_gates_forward(px16, rec16, h, None)
    calls["GRU forward, bf16 products cast to float32 first"] = (
        lambda: ext.gru_gates_forward(px16.float(), rec16.float(), h, None))
    # T-GRU (2 gates, no input), L-GRU (3 gates, input and linear term); keep < 1 is dropout
    for name, gates, has_input, linear in (("T-GRU", 2, False, False), ("L-GRU", 3, True, True)):
        p = r(rows, (gates + 1 + linear) * d) if has_input else None
        u = r(rows, (gates + 1) * d)
        gain, offset, bias = r(gates * d), r(gates * d), r(d)
        for label, keep in (("no dropout", 1.0), ("dropout", 0.9)):
            args = (gain, offset, bias, gates, linear, keep, 7, 0)
            _, saved, rstd = ext.ln_gates_forward(p, u, h, *args)
            calls[f"{name} forward, {label}"] = lambda p=p, u=u, args=args: ext.ln_gates_forward(p, u, h, *args)
            calls[f"{name} backward, {label}"] = (
                lambda p=p, saved=saved, rstd=rstd, gain=gain, gates=gates, linear=linear, keep=keep:
                ext.ln_gates_backward(grad, p, h, saved, rstd, gain, gates, linear, keep, 7, 0))
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64, help="rows per sweep (batch x beam)")
    parser.add_argument("--size", type=int, default=256, help="hidden units d")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--extension", type=Path, action="append", default=[],
                        help="another build's .so to time beside this checkout's (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    current = kernels.extension()
    if current is None:
        raise SystemExit("error: this checkout's C++ kernels did not build (see the message above)")
    builds: List[ModuleType] = [load_build(path) for path in args.extension] + [current]
    names = [Path(b.__file__).stem for b in builds]
    rows = {name: {k: time_us(call, args.repeats, args.rounds) for k, call in sweeps(b, args.rows, args.size).items()}
            for name, b in zip(names, builds)}
    print(f"{args.rows} rows x {args.size} units, {args.threads} thread(s), median of {args.rounds} rounds; "
          f"microseconds per call (ns per unit)")
    print("| sweep | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    units = args.rows * args.size
    for key in rows[names[-1]]:
        cells = [f"{rows[n][key]:.1f} ({rows[n][key] * 1e3 / units:.2f})" if rows[n][key] == rows[n][key] else "-"
                 for n in names]
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
