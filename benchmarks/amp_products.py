"""Which matrix products of one training step run in bf16 under autocast, and what the
autocast path leaves out.

    python -m benchmarks.amp_products [--config benchmarks/configs/rnnsearch-gru.yaml]
        [--batch 40] [--src-len 30] [--tgt-len 30] [--vocab 8000] [--time ROUNDS]

One training step (forward, label-smoothed loss, backward) of the config's model on a random
batch runs under bf16 autocast on the CPU inside a dispatch mode that sees every aten
matrix product (mm, addmm, bmm, baddbmm and their in-place forms) with its operand dtypes,
and counts its FLOPs (2 m k n). It prints the FLOPs per (product, dtypes), and where each
fp32 product came from in rnmt's code. The count does not depend on the machine's load:
it is a census, not a timing.

It also counts, in one fp32 and one bf16-autocast step, the calls of rnmt's fast training
paths: the compiled kernels (fused GRU step, attention scores, label-smoothed loss, ...)
and the products whose weight gradients go to a per-pass buffer (`rnmt.deferred_grads`).
Under CPU autocast the kernels take bf16 inputs cast up and compute in fp32
(`rnmt.precision`), and the per-pass weight gradients come from bf16 products over the
stacked steps. ``--time`` times fp32, bf16 autocast, and bf16 autocast without those fast
paths (plain PyTorch element-wise expressions and plain autograd: autocast alone).
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

REPO = Path(__file__).resolve().parent.parent

aten = torch.ops.aten
# product -> positions of its two matrix operands
PRODUCTS = {aten.mm.default: (0, 1), aten.bmm.default: (0, 1), aten.addmm.default: (1, 2),
            aten.baddbmm.default: (1, 2), aten.addmm_.default: (1, 2), aten.baddbmm_.default: (1, 2)}


class ProductCensus(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.flops: collections.Counter = collections.Counter()
        self.fp32_sites: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in PRODUCTS:
            i, j = PRODUCTS[func]
            a, b = args[i], args[j]
            flops = 2 * a.numel() * b.shape[-1]
            dtypes = (str(a.dtype).replace("torch.", ""), str(b.dtype).replace("torch.", ""))
            self.flops[(func.overloadpacket.__name__, *dtypes)] += flops
            if a.dtype == torch.float32 or b.dtype == torch.float32:
                frames = [f for f in traceback.extract_stack() if "/rnmt/" in f.filename]
                site = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "outside rnmt"
                self.fp32_sites[site] += flops
        return func(*args, **(kwargs or {}))


class FastPaths:
    """Counts, within the block, calls of the compiled kernels (`rnmt.kernels`) and the
    products whose weight gradients go to a per-pass buffer (`rnmt.deferred_grads`)."""

    def __enter__(self) -> FastPaths:
        from rnmt import deferred_grads, kernels

        self.calls: collections.Counter = collections.Counter()
        self._kernels, self._deferred = kernels, deferred_grads
        self._module = kernels.extension()
        self._product = deferred_grads._Scope.product
        calls, product = self.calls, self._product

        class Counting:
            def __init__(self, module) -> None:
                self._module = module

            def __getattr__(self, name):
                attr = getattr(self._module, name)
                if not callable(attr):
                    return attr

                def counted(*a, **k):
                    calls[f"kernel {name}"] += 1
                    return attr(*a, **k)
                return counted

        def counted_product(scope, *a, **k):
            calls["deferred weight-gradient product"] += 1
            return product(scope, *a, **k)

        if self._module is not None:
            kernels._active = Counting(self._module)
        deferred_grads._Scope.product = counted_product
        return self

    def __exit__(self, *exc) -> None:
        if self._module is not None:
            self._kernels._active = self._module
        self._deferred._Scope.product = self._product


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=str(REPO / "benchmarks" / "configs" / "rnnsearch-gru.yaml"))
    p.add_argument("--set", action="append", default=[], help="config override KEY=VALUE (repeatable)")
    p.add_argument("--batch", type=int, default=40)
    p.add_argument("--src-len", type=int, default=30)
    p.add_argument("--tgt-len", type=int, default=30)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--time", type=int, default=0, metavar="ROUNDS",
                   help="also time fp32 and bf16 training steps (with Adam) in ROUNDS alternating rounds of 3, "
                        "one thread, by the process's CPU time")
    args = p.parse_args(argv)

    from rnmt import products
    from rnmt.config import load_config
    from rnmt.models import build_model
    from rnmt.models.base import uniform_init_
    from rnmt.training.loss import label_smoothed_nll

    cfg = load_config(Path(args.config), args.set + [f"model.src_vocab_size={args.vocab}",
                                                     f"model.tgt_vocab_size={args.vocab}"])
    torch.manual_seed(0)
    model = build_model(cfg.model)
    uniform_init_(model, cfg.train.init_scale)
    model.train()
    B, S, T, V = args.batch, args.src_len, args.tgt_len, args.vocab
    src, tgt_in, tgt_out = (torch.randint(4, V, (B, n)) for n in (S, T, T))
    mask = torch.ones(B, S, dtype=torch.bool)

    def step(amp: bool) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            logits = model(src, mask, tgt_in)
        loss, _ = label_smoothed_nll(logits.float(), tgt_out, tgt_out != 0, 0.1)
        loss.backward()

    paths = {}
    for amp in (False, True):
        step(amp)  # warm-up (kernel builds, lazily made tables)
        with FastPaths() as counted:
            step(amp)
        paths["bf16 autocast" if amp else "fp32"] = counted
    census = ProductCensus()
    with census, products.use(False):  # oneDNN's fp32 products (rnmt.products) bypass the dispatcher
        step(True)
    total = sum(census.flops.values())
    print(f"{cfg.model.arch} ({cfg.model.cell}), {B} x {S} -> {T}, vocab {V}: "
          f"{total / 1e9:.2f} GFLOP of matrix products in one bf16-autocast training step")
    for (name, a, b), f in census.flops.most_common():
        print(f"  {name:<16} {a:>9} x {b:<9} {f / 1e9:8.2f} GFLOP  {f / total:6.1%}")
    if census.fp32_sites:
        print("fp32 products by place:")
        for site, f in census.fp32_sites.most_common(10):
            print(f"  {site:<40} {f / total:6.1%}")
    print("rnmt's fast training paths, calls in one step:")
    for label, counted in paths.items():
        print(f"  {label:<14} " + ", ".join(f"{k} {v}" for k, v in sorted(counted.calls.items())) or "none")
    if args.time:
        import time

        torch.set_num_threads(1)
        optimiser = torch.optim.Adam(model.parameters(), lr=1e-5)

        def update(amp: bool) -> None:
            optimiser.zero_grad(set_to_none=True)
            step(amp)
            optimiser.step()

        from rnmt import deferred_grads, precision

        # bf16 with the fast paths (kernels in fp32, per-pass weight gradients), and without:
        # the PyTorch expressions and plain autograd, as autocast alone gives
        variants = {"fp32": (False, True), "bf16": (True, True), "bf16 unfused": (True, False)}
        best = dict.fromkeys(variants, float("inf"))
        for _ in range(args.time):
            for name, (amp, fast) in variants.items():
                precision.fused_under_autocast = fast
                with deferred_grads.enabled(fast):
                    update(amp)
                    t0 = time.process_time()
                    for _ in range(3):
                        update(amp)
                best[name] = min(best[name], (time.process_time() - t0) / 3)
        precision.fused_under_autocast = True
        print(f"training step, CPU time, 1 thread (best of {args.time} rounds): fp32 {best['fp32']:.3f} s, "
              f"bf16 autocast {best['bf16']:.3f} s ({best['fp32'] / best['bf16']:.2f}x fp32), "
              f"bf16 autocast without the fast paths {best['bf16 unfused']:.3f} s "
              f"({best['fp32'] / best['bf16 unfused']:.2f}x fp32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
