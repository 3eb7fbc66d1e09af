#!/usr/bin/env python3
"""Flood ``rnmt serve`` with more concurrent requests than it queues, then SIGTERM it.

The script starts ``rnmt serve`` on a free loopback port with a small queue, fires
``--requests`` requests at once (a mix of ordinary ones, long ones at beam 16 with
alignments, and ones over the per-request subword limit), and checks that every one is
answered with 200, 413, 429, 503 or 504 and a JSON body, none hangs past its client
timeout, and reports the server's peak resident memory (VmHWM) before and after. With
``--sigterm`` it sends SIGTERM while the flood is in flight and checks that every request
still gets an answer and the server exits.

    python -m benchmarks.serve_flood --model runs/quickstart --requests 1000 --json flood.json

Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

from rnmt.bench.server_process import serve_process

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"
ANSWERS = {200, 413, 429, 503, 504}


def peak_rss_mb(pid: int) -> Optional[float]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(match.group(1)) / 1024 if match else None


def bodies(n: int, seed: int = 0) -> List[dict]:
    rng = random.Random(seed)
    lines = (SAMPLE / "test.es").read_text(encoding="utf-8").splitlines()[:200]
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:  # over the subword limit: 413 before it reaches the queue
            out.append({"texts": [" ".join(lines[:30])[:1900]] * 8})
        elif kind == 1:  # expensive: long texts, wide beam, alignments
            out.append({"texts": [" ".join(rng.sample(lines, 3))] * 4, "beam": 16, "nbest": 4,
                        "return_alignment": True})
        else:
            out.append({"text": rng.choice(lines)})
    return out


async def flood(url: str, n: int, client_timeout: float, on_sent=None) -> Dict[str, object]:
    import httpx

    statuses: collections.Counter = collections.Counter()
    not_json, hung, errors = 0, 0, collections.Counter()
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=client_timeout, limits=limits) as client:
        async def one(body):
            nonlocal not_json, hung
            try:
                r = await client.post(f"{url}/translate", json=body)
            except httpx.TimeoutException:
                hung += 1
                return
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1
                return
            statuses[r.status_code] += 1
            if not r.headers.get("content-type", "").startswith("application/json"):
                not_json += 1

        tasks = [asyncio.create_task(one(b)) for b in bodies(n)]
        if on_sent is not None:  # mid-flood: once a tenth of the requests has been answered
            while sum(statuses.values()) < n // 10 and not all(t.done() for t in tasks):
                await asyncio.sleep(0.005)
            on_sent()
        t0 = time.monotonic()
        await asyncio.gather(*tasks)
        seconds = time.monotonic() - t0
    return {"requests": n, "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "answered": sum(statuses.values()), "not_json": not_json, "hung": hung,
            "connection_errors": dict(errors), "seconds": round(seconds, 2),
            "unexpected_statuses": sorted(set(statuses) - ANSWERS)}


def run_flood(model: str, n: int, sigterm: bool = False, client_timeout: float = 60.0,
              extra: Optional[List[str]] = None) -> Dict[str, object]:
    extra = extra or ["--max-queue", "8", "--timeout", "10",
                      "--max-request-tokens", "400", "--max-batch-tokens", "1000"]
    with serve_process(model, extra, log_level="info") as server:
        proc = server.proc
        before = peak_rss_mb(proc.pid)
        result = asyncio.run(flood(server.url, n, client_timeout,
                                   on_sent=(lambda: proc.send_signal(signal.SIGTERM)) if sigterm else None))
        result["peak_rss_mb_before"] = before
        result["peak_rss_mb"] = peak_rss_mb(proc.pid)
        if sigterm:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                result["exited"] = False
            else:
                result["exited"] = True
                result["exit_code"] = proc.returncode
        return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(REPO / "runs" / "quickstart"))
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--sigterm", action="store_true", help="SIGTERM the server during the flood")
    ap.add_argument("--json")
    args = ap.parse_args()
    result = run_flood(args.model, args.requests, args.sigterm)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    ok = result["answered"] == args.requests and not result["unexpected_statuses"] and not result["not_json"]
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
