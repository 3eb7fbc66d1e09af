#!/usr/bin/env python3
"""Load test for ``rnmt serve``: N concurrent clients on loopback, batching on vs off.

For each mode the script starts ``rnmt serve`` as a subprocess on a free loopback port,
lets ``--clients`` clients send one-sentence ``POST /translate`` requests (sentences of the
bundled test set, in turn) for ``--duration`` seconds after a short warm-up, and reports
requests/s, p50/p99 latency and the error count; then it compares the two modes.

    python -m benchmarks.serve_load                       # runs/quickstart, or a tiny model trained here
    python -m benchmarks.serve_load --model runs/mine --clients 16 --duration 20 --json load.json

Everything is bounded: the run length, every request (``--request-timeout``) and the server
start. Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"
QUICKSTART = REPO / "runs" / "quickstart"
TINY = REPO / "runs" / "serve-load-tiny"


def has_checkpoint(path: Path) -> bool:
    return path.is_file() or (path / "best.safetensors").is_file()


def train_tiny_model(out: Path, minutes: float) -> Path:
    """A small RNNSearch trained for ``minutes`` on the bundled sample (reused when present)."""
    if has_checkpoint(out):
        return out
    print(f"no model given and no {QUICKSTART.relative_to(REPO)}: training a small one for "
          f"{minutes * 60:.0f} s in {out.relative_to(REPO)} ...", file=sys.stderr, flush=True)
    overrides = {"train.max_minutes": minutes, "train.validate_every": 1000000, "train.log_every": 20,
                 "train.progress": "false", "data.dev_max_sentences": 20, "model.emb_size": 128,
                 "model.hidden_size": 256, "data.vocab.size": 2000}
    cmd = [sys.executable, "-m", "rnmt", "train", str(REPO / "configs" / "quickstart.yaml"), "--out", str(out)]
    for key, value in overrides.items():
        cmd += ["--set", f"{key}={value}"]
    subprocess.run(cmd, check=True, cwd=REPO, timeout=minutes * 60 + 600, stdout=subprocess.DEVNULL)
    return out


class Server:
    """``rnmt serve`` in a subprocess on a free loopback port."""

    def __init__(self, model: Path, batching: bool, threads: int, max_wait_ms: float, start_timeout: float) -> None:
        cmd = [sys.executable, "-m", "rnmt", "serve", "--model", str(model), "--host", "127.0.0.1", "--port", "0",
               "--threads", str(threads), "--max-wait-ms", str(max_wait_ms), "--log-level", "warning"]
        if not batching:
            cmd.append("--no-batching")
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        line = self._readline(start_timeout)
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not match:
            self.stop()
            raise SystemExit(f"error: the server did not start: {line.strip() or 'no output'}")
        self.url = f"http://127.0.0.1:{match.group(1)}"

    def _readline(self, timeout: float) -> str:
        import threading

        box: List[str] = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stderr.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return box[0] if box else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def percentile(values: List[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def wait_ready(client, url: str, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if (await client.get(f"{url}/health", timeout=2)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit(f"error: {url}/health did not answer within {timeout:g} s")


async def load(url: str, sentences: List[str], clients: int, duration: float, warmup: float,
               request_timeout: float, beam: Optional[int]) -> Dict[str, float]:
    import httpx

    limits = httpx.Limits(max_connections=clients + 2, max_keepalive_connections=clients + 2)
    async with httpx.AsyncClient(limits=limits, timeout=request_timeout) as client:
        await wait_ready(client, url, 60)
        busy_before = (await client.get(f"{url}/health", timeout=10)).json()["batching"]["busy_seconds"]
        counter = iter(range(10 ** 9))
        latencies: List[float] = []
        errors: Dict[str, int] = {}
        done_times: List[float] = []
        t_start = time.monotonic()
        measure_from = t_start + warmup
        t_end = measure_from + duration

        async def one_client() -> None:
            while time.monotonic() < t_end:
                text = sentences[next(counter) % len(sentences)]
                body = {"text": text} if beam is None else {"text": text, "beam": beam}
                sent = time.monotonic()
                try:
                    r = await client.post(f"{url}/translate", json=body)
                    ok, kind = r.status_code == 200, f"HTTP {r.status_code}"
                except httpx.HTTPError as exc:
                    ok, kind = False, type(exc).__name__
                now = time.monotonic()
                if sent < measure_from:  # warm-up request: not counted
                    continue
                if ok:
                    latencies.append(now - sent)
                    done_times.append(now)
                else:
                    errors[kind] = errors.get(kind, 0) + 1

        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = max(done_times[-1] if done_times else t_end, t_end) - measure_from
        stats = (await client.get(f"{url}/health", timeout=10)).json()["batching"]
    return {
        "latencies": latencies,
        "requests": len(latencies), "errors": sum(errors.values()), "error_kinds": errors,
        "seconds": round(elapsed, 3), "requests_per_s": round(len(latencies) / elapsed, 2),
        "mean_batch_requests": stats.get("mean_batch_requests"),
        "model_busy": round((stats["busy_seconds"] - busy_before) / (elapsed + warmup), 3),
    }


def combine(runs: List[Dict]) -> Dict:
    """One mode's figures over all rounds (latencies pooled, rates from total requests and time)."""
    latencies = [x for r in runs for x in r.pop("latencies")]
    seconds = sum(r["seconds"] for r in runs)
    kinds: Dict[str, int] = {}
    for r in runs:
        for kind, n in r["error_kinds"].items():
            kinds[kind] = kinds.get(kind, 0) + n
    return {
        "requests": len(latencies), "errors": sum(r["errors"] for r in runs), "error_kinds": kinds,
        "seconds": round(seconds, 3), "requests_per_s": round(len(latencies) / seconds, 2),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1), "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "mean_batch_requests": round(sum(r["mean_batch_requests"] or 0 for r in runs) / len(runs), 2),
        "model_busy": round(sum(r["model_busy"] for r in runs) / len(runs), 3),
        "rounds_requests_per_s": [r["requests_per_s"] for r in runs],
    }


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="model directory or checkpoint (default: runs/quickstart, else a tiny model "
                                   "trained here)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--duration", type=float, default=15.0, help="measured seconds per mode (default: 15)")
    p.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds before each run (default: 3)")
    p.add_argument("--threads", type=int, default=1,
                   help="server CPU threads (default: 1, leaving a core to the clients)")
    p.add_argument("--max-wait-ms", type=float, default=5.0, help="server batching wait (default: 5)")
    p.add_argument("--beam", type=int, help="beam size per request (default: the model's)")
    p.add_argument("--rounds", type=int, default=1, help="alternate the modes this many times (default: 1)")
    p.add_argument("--request-timeout", type=float, default=60.0)
    p.add_argument("--train-minutes", type=float, default=0.5, help="training time of the fallback model")
    p.add_argument("--modes", default="batching,no-batching", help="comma-separated: batching, no-batching")
    p.add_argument("--json", help="also write the results to this JSON file")
    args = p.parse_args(argv)
    if not (1 <= args.clients <= 1000 and 0 < args.duration <= 600 and args.warmup >= 0 and 1 <= args.rounds <= 10):
        p.error("need 1 <= --clients <= 1000, 0 < --duration <= 600, --warmup >= 0, 1 <= --rounds <= 10")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ("batching", "no-batching") for m in modes):
        p.error("--modes takes 'batching' and/or 'no-batching'")

    if args.model:
        model = Path(args.model)
    elif has_checkpoint(QUICKSTART):
        model = QUICKSTART
    else:
        model = train_tiny_model(TINY, args.train_minutes)
    sentences = [line.strip() for line in (SAMPLE / "test.es").read_text(encoding="utf-8").splitlines()
                 if line.strip()]

    runs: Dict[str, List[Dict[str, float]]] = {mode: [] for mode in modes}
    for round_no in range(args.rounds):  # modes alternate, so a change in machine load hits both
        for mode in modes:
            print(f"round {round_no + 1}/{args.rounds}, {mode}: {args.clients} clients, {args.warmup:g} s warm-up + "
                  f"{args.duration:g} s ...", file=sys.stderr, flush=True)
            server = Server(model, mode == "batching", args.threads, args.max_wait_ms, start_timeout=120)
            try:
                runs[mode].append(asyncio.run(load(server.url, sentences, args.clients, args.duration, args.warmup,
                                                   args.request_timeout, args.beam)))
            finally:
                server.stop()
    results = {mode: combine(r) for mode, r in runs.items()}

    print(f"\nmodel {model}, {args.clients} clients, {args.rounds} x {args.duration:g} s per mode, "
          f"server threads {args.threads}, max wait {args.max_wait_ms:g} ms, beam {args.beam or 'model default'}")
    print(f"{'mode':<12} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'batch':>6} "
          f"{'busy':>5}")
    for mode, r in results.items():
        print(f"{mode:<12} {r['requests']:>9} {r['requests_per_s']:>8.2f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
              f"{r['errors']:>7} {r['mean_batch_requests'] or 0:>6.2f} {r['model_busy']:>5.0%}")
    print("batch: mean requests per model call; busy: share of the time the model was translating")
    summary: Dict[str, object] = {"model": str(model), "clients": args.clients, "duration_s": args.duration,
                                  "rounds": args.rounds, "threads": args.threads, "beam": args.beam,
                                  "max_wait_ms": args.max_wait_ms, "modes": results}
    if "batching" in results and "no-batching" in results and results["no-batching"]["requests_per_s"] > 0:
        speedup = results["batching"]["requests_per_s"] / results["no-batching"]["requests_per_s"]
        errors = sum(r["errors"] for r in results.values())
        summary["speedup"] = round(speedup, 2)
        print(f"speedup with batching: {speedup:.2f}x (target >= 3x at 16 clients), errors: {errors}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
