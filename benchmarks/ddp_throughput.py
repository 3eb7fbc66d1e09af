"""Training throughput of 1 vs N data-parallel processes (torchrun), and bf16 vs fp32.

Every variant trains the same config for a fixed number of updates with the same global
batch (N processes x 1 batch, or 1 process accumulating N batches) and reads the trainer's
own ``tokens_per_s`` (real target tokens of the whole update per second of training) from
``log.jsonl``; the median over the updates after ``--skip`` is reported.

    python -m benchmarks.ddp_throughput configs/quickstart.yaml --steps 30 --nproc 2
    python -m benchmarks.ddp_throughput configs/quickstart.yaml --steps 20 --amp

On CPU each process gets ``--threads`` threads (default 1); ``--compare-threads`` adds one
process with N x threads threads, the same cores used by threads instead of processes. Validation is
switched off (data.dev=null).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rnmt.training.run_log import LOG_FILE, read_run_log

REPO = Path(__file__).resolve().parents[1]


def train(config: str, out: Path, nproc: int, overrides, timeout: float) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "-m", "rnmt", "train", config, "--out", str(out)]
    for item in overrides:
        cmd += ["--set", item]
    res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        sys.exit(res.stderr[-3000:])
    return out


def median_tokens_per_s(out: Path, skip: int) -> float:
    rows = read_run_log(out / LOG_FILE).train
    rates = [r["tokens_per_s"] for r in rows if r["step"] > skip]
    return statistics.median(rates)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--skip", type=int, default=3, help="first updates left out of the median")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--device", default="cpu")
    p.add_argument("--compare-threads", action="store_true",
                   help="also run 1 process with nproc x threads threads (meaningful on an idle machine only)")
    p.add_argument("--amp", action="store_true", help="compare train.amp=bf16 with none on one process instead")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--work", help="directory for the runs (default: a temporary one)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="rnmt-ddp-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        common = [f"train.max_steps={args.steps}", "train.log_every=1", "train.max_minutes=null",
                  "train.validate_every=0", "data.dev=null", "train.progress=false",
                  f"train.device={args.device}", f"data.cache_dir={work / 'cache'}", *args.overrides]
        n = args.nproc
        if args.amp:
            variants = [("fp32, 1 process", 1, ["train.amp=none"], args.threads),
                        ("bf16 autocast, 1 process", 1, ["train.amp=bf16"], args.threads)]
        else:
            variants = [(f"1 process x {args.threads} thread(s), accumulate {n}", 1, [f"train.accumulate={n}"],
                         args.threads),
                        (f"{n} processes x {args.threads} thread(s), accumulate 1", n, ["train.accumulate=1"],
                         args.threads),
                        ]
            if args.compare_threads:
                variants.append((f"1 process x {n * args.threads} threads, accumulate {n}", 1,
                                 [f"train.accumulate={n}"], n * args.threads))
        results = []
        vocab = None
        for k, (name, nproc, extra, threads) in enumerate(variants):
            sets = common + extra + [f"train.threads={threads}"]
            if vocab:
                sets.append(f"data.vocab.model={vocab}")
            out = train(args.config, work / f"run{k}", nproc, sets, args.timeout)
            vocab = vocab or (out / "spm.model" if (out / "spm.model").is_file() else None)
            rate = median_tokens_per_s(out, args.skip)
            results.append((name, rate))
            print(json.dumps({"variant": name, "tokens_per_s": round(rate, 1)}), flush=True)
        base = results[0][1]
        print("\n| variant | target tokens/s | vs first |\n|---|---:|---:|")
        for name, rate in results:
            print(f"| {name} | {rate:.0f} | {rate / base:.2f}x |")


if __name__ == "__main__":
    main()
