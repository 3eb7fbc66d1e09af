"""Peak memory and step time of training on batches of many shapes, under memory settings.

    python -m benchmarks.shape_rss [--steps 40] [--threads 2] [--precisions fp32,bf16]
        [--variants default,mmap,cache0,both] [--rounds 1]

Token-budget batches come in many (sentences x length) shapes, and the process's peak RSS
grows with their number: the C library keeps freed buffers of the sizes it has seen in its
heap, and oneDNN (the CPU's bf16 products) keeps one compiled primitive with its buffers per
product shape. Each variant runs in a fresh process: the same `--steps` training updates
(forward, label-smoothed loss, backward, Adam) of the peer-size RNNSearch-GRU
(benchmarks/configs/rnnsearch-gru.yaml, vocabulary 8,000) on random batches whose sentence
count (20-90) and lengths (10-60) are drawn from one seed, so every variant sees the same
shapes. It prints the process's peak RSS (the kernel's maximum resident set size), its
RSS after 10 and 20 updates, and the median wall-clock seconds per update after the first
five.

Variants:
  default   as rnmt's trainer runs: oneDNN's cache bounded (`rnmt.memory.PRIMITIVE_CACHE`)
            and the heap trimmed every `rnmt.memory.TRIM_EVERY` updates (`rnmt.memory.trim`)
  none      nothing bounded: glibc's adaptive mmap threshold, oneDNN's 1,024 primitives
  trimN     only the trimming, every N updates (trim1: after every update)
  cache     only oneDNN's cache bounded
  cacheN    oneDNN's cache bounded to N primitives (cache0: off), and the trimming as rnmt
            runs it (cache0 alone: nothing else)
  mmap      glibc's mmap threshold fixed at 128 KiB (MALLOC_MMAP_THRESHOLD_), nothing else

Figures are per machine: name its CPU flags with them (bf16 products go through oneDNN only
where the CPU has AVX-512 bf16; elsewhere bf16 is emulated and this measures the C library
alone). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import module_command, module_env

REPO = Path(__file__).resolve().parent.parent

VARIANTS = ("default", "none", "cache", "cache0", "mmap")  # and trimN


def cache_capacity(variant: str) -> int:
    """N of a cacheN variant (not cache0, which keeps its older meaning), else 0."""
    n = variant[5:]
    return int(n) if variant.startswith("cache") and n.isdigit() and int(n) > 0 else 0


def trim_period(variant: str) -> int:
    if variant == "default" or cache_capacity(variant):
        from rnmt.memory import TRIM_EVERY
        return TRIM_EVERY
    return int(variant[4:]) if variant.startswith("trim") and variant[4:].isdigit() else 0


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(args) -> None:
    import torch

    from rnmt import memory
    from rnmt.bench.throughput import peak_rss_mb
    from rnmt.config import load_config
    from rnmt.models import build_model
    from rnmt.models.base import uniform_init_
    from rnmt.training.loss import label_smoothed_nll
    from rnmt.training.optimizers import build_optimizer

    trimmer = memory.PeriodicTrim(every=trim_period(args.variant))
    torch.set_num_threads(args.threads)
    V = 8000
    cfg = load_config(REPO / "benchmarks" / "configs" / "rnnsearch-gru.yaml",
                      [f"model.src_vocab_size={V}", f"model.tgt_vocab_size={V}"])
    torch.manual_seed(0)
    model = build_model(cfg.model)
    uniform_init_(model, cfg.train.init_scale)
    model.train()
    optimiser = build_optimizer(model.parameters(), cfg.train)
    amp = args.precision == "bf16"
    rng = random.Random(1)
    times, marks = [], {}
    for step in range(1, args.steps + 1):
        B, S, T = rng.randint(20, 90), rng.randint(10, 60), rng.randint(10, 60)
        src, tgt_in, tgt_out = (torch.randint(4, V, (B, n)) for n in (S, T, T))
        mask = torch.ones(B, S, dtype=torch.bool)
        t0 = time.perf_counter()
        optimiser.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            logits = model(src, mask, tgt_in)
        loss, _ = label_smoothed_nll(logits, tgt_out, tgt_out != 0, 0.1)
        loss.backward()
        optimiser.step()
        trimmer.after_update()
        times.append((time.perf_counter() - t0) / (B * T))
        if step in (10, 20):
            marks[step] = rss_mib()
    peak = peak_rss_mb()
    print(json.dumps({"peak_rss_mib": round(peak), "rss_after_10": round(marks.get(10, 0)),
                      "rss_after_20": round(marks.get(20, 0)),
                      "ms_per_1k_target_tokens": round(1e6 * statistics.median(times[5:]), 2)}))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--variants", default="default,none,trim1,trim10,cache")
    p.add_argument("--rounds", type=int, default=1, help="alternating rounds; the table keeps each variant's median")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--precision", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps < 6:
        p.error("--steps must be at least 6: the timing skips the first five updates")
    if args.child:
        child(args)
        return 0
    from rnmt import memory

    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS and not trim_period(v) and not cache_capacity(v)]
    if unknown:
        p.error(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}, trimN, cacheN")
    runs: dict = {}
    for _ in range(args.rounds):
        for precision in args.precisions.split(","):
            for variant in variants:
                env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
                for name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "DNNL_PRIMITIVE_CACHE_CAPACITY",
                             "MALLOC_MMAP_THRESHOLD_", "RNMT_MEMORY_BOUNDS"):
                    env.pop(name, None)
                if variant in ("default", "cache"):
                    env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(memory.PRIMITIVE_CACHE)
                elif variant == "cache0":
                    env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = "0"
                elif cache_capacity(variant):
                    env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(cache_capacity(variant))
                else:
                    env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = "1024"  # oneDNN's default
                if variant == "mmap":
                    env["MALLOC_MMAP_THRESHOLD_"] = "131072"
                out = subprocess.run(
                    module_command("benchmarks.shape_rss", "--child", "--variant", variant, "--precision", precision,
                                   "--steps", str(args.steps), "--threads", str(args.threads)),
                    env=module_env(env), capture_output=True, text=True, check=True)
                runs.setdefault((precision, variant), []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    flags = set(open("/proc/cpuinfo").read().split()) if os.path.exists("/proc/cpuinfo") else set()
    cpu = ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags)
    print(f"{args.steps} updates of random batches, {args.threads} threads, CPU flags: {cpu or 'unknown'}")
    print(f"{'precision':<9} {'variant':<8} {'peak RSS MiB':>12} {'after 10':>9} {'after 20':>9} "
          f"{'ms / 1k tgt tok':>16}")
    table = []
    for (precision, variant), rs in runs.items():
        row = {"precision": precision, "variant": variant,
               **{k: statistics.median(r[k] for r in rs) for k in rs[0]}}
        table.append(row)
        print(f"{precision:<9} {variant:<8} {row['peak_rss_mib']:>12,.0f} {row['rss_after_10']:>9,.0f} "
              f"{row['rss_after_20']:>9,.0f} {row['ms_per_1k_target_tokens']:>16.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"cpu_flags": cpu, "steps": args.steps, "threads": args.threads,
                                              "rounds": args.rounds, "rows": table}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
