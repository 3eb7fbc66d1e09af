"""Study. Question: How much of a bf16 training update on a CPU goes to creating oneDNN primitives, and how many
should the primitive cache keep?
Measured at: adb4d25.
Answer: on an AMX Xeon 25-35 creations an update, 13-22% of its time, from new batch shapes rather
than evictions; a cache of 8 primitives costs 3% more creations than 64 and less memory, so
rnmt keeps 8 (docs/cpu-classes.md, "An Intel Xeon with AMX", and docs/precision.md, "bf16
training").

How much of a CPU training update goes to creating oneDNN primitives.

oneDNN builds (JIT-compiles) a kernel for every new product shape, a "primitive", and keeps
the last ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` of them (rnmt sets 8: `rnmt.memory`). Token
batches differ in shape from update to update, so each update brings new shapes; on a CPU
with AMX a creation costs milliseconds. This trains a system at the peer size (RNNSearch-GRU
unless ``--system`` names another of benchmarks/gpu.py's) for some warm-up updates, then
logs oneDNN's creations over the measured ones, in one child process per cache capacity,
and reports the creations (cache misses), their time and the updates'.

    python -m benchmarks.studies.onednn_creations --capacities 64,1024 --precision bf16
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import REPO, gpu, module_command, module_env  # gpu: its systems, and their trainers


def child(args) -> None:
    """One process at one capacity: warm up, then the measured updates with the creation log on
    (oneDNN writes it to standard output; the parent reads it)."""
    import torch

    from benchmarks.prepare import prepare

    work = Path(args.work)
    prepared = work / "data"
    stats = prepare(Path(args.data), prepared, log=lambda *_: None)
    overrides = gpu.system_overrides((256, 512), args.batch_tokens, prepared, stats, work, "cpu", args.precision,
                                     args.threads)
    trainer = gpu.make_trainer(gpu.SYSTEMS[args.system][0], overrides, work / f"run-{args.capacity}")
    batches = trainer.sampler.forever()
    for _ in range(args.warmup):
        trainer.train_step([next(batches)])
    sys.stdout.flush()
    with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON_CREATION):
        start = time.perf_counter()
        for _ in range(args.steps):
            trainer.train_step([next(batches)])
        seconds = time.perf_counter() - start
    sys.stdout.flush()
    print(f"MEASURED {seconds:.4f}", flush=True)


def tally(output: str):
    """Creations (misses) and their milliseconds, cache hits, and the measured seconds."""
    misses, miss_ms, hits, seconds = 0, 0.0, 0, None
    for line in output.splitlines():
        if line.startswith("MEASURED "):
            seconds = float(line.split()[1])
        elif line.startswith("onednn_verbose") and ",primitive,create:" in line:
            if "create:cache_miss" in line:
                misses += 1
                miss_ms += float(line.rsplit(",", 1)[1])
            else:
                hits += 1
    return misses, miss_ms, hits, seconds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--capacities", default="64,1024", help="oneDNN primitive cache capacities, comma-separated")
    p.add_argument("--system", choices=sorted(gpu.SYSTEMS), default="rnnsearch-gru",
                   help="a peer-size system of benchmarks/gpu.py")
    p.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-tokens", type=int, default=4000)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--capacity", type=int, help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return 0
    print(f"{args.system} 256/512, {args.precision}, {args.threads} threads, {args.batch_tokens}-token batches: "
          f"{args.steps} updates after {args.warmup}\n")
    print("| cache capacity | creations | their ms | ms per creation | cache hits | update ms | creations' share |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="rnmt-creations-") as work:
        for capacity in [int(c) for c in args.capacities.split(",") if c.strip()]:
            env = dict(os.environ, ONEDNN_PRIMITIVE_CACHE_CAPACITY=str(capacity))
            cmd = module_command("benchmarks.studies.onednn_creations", "--child", f"--capacity={capacity}",
                                 f"--work={work}", f"--system={args.system}", f"--precision={args.precision}",
                                 f"--threads={args.threads}", f"--batch-tokens={args.batch_tokens}",
                                 f"--warmup={args.warmup}", f"--steps={args.steps}", f"--data={args.data}")
            done = subprocess.run(cmd, env=module_env(env), capture_output=True, text=True, cwd=REPO)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return done.returncode
            misses, miss_ms, hits, seconds = tally(done.stdout)
            per = miss_ms / misses if misses else 0.0
            update_ms = seconds * 1000 / args.steps
            print(f"| {capacity} | {misses} | {miss_ms:.0f} | {per:.2f} | {hits} | {update_ms:.0f} | "
                  f"{miss_ms / (seconds * 1000):.0%} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
