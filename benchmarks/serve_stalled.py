#!/usr/bin/env python3
"""How many stalled clients ``rnmt serve`` holds while ``/health`` and ``/translate`` still answer.

For each count N of ``--counts``, the script starts ``rnmt serve`` on a free loopback port,
opens N connections that stall (three in four send the headers and part of a JSON body,
one in four part of the headers, then all wait), and then asks ``GET /health`` and
``POST /translate`` ``--probes`` times each, every time on a new connection, recording the
status and latency. It reports per N the answers, the median and largest latency, how
many stalled connections are still waiting (open, nothing received), the server's open file
descriptors and resident memory.

The stalled connections come from many loopback source addresses (127.0.x.y), at most
``--per-address`` from each, so that the server's per-address bound
(``--max-incomplete-per-client``) does not close them: what is measured is what many
clients can do together. The server runs with ``--read-timeout`` long enough to hold them
all through the probes (``--server-args``); with the default 10 s a client must keep
reopening them.

    python -m benchmarks.serve_stalled --model runs/quickstart --counts 100,500,1000,2000 --json stalled.json

Every open file counts against ``ulimit -n`` in both processes (the script raises its soft
limit to the hard one; ``--server-nofile`` sets the server's). Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import socket
import statistics
import time
from pathlib import Path
from typing import Dict, List, Optional

from rnmt.bench.server_process import serve_process, waiting

REPO = Path(__file__).resolve().parent.parent
MAX_COUNT = 50_000  # a bound on what one run may open
HEADERS = (b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: 100\r\n\r\n")
PARTIAL_BODY = HEADERS + b'{"text": "Y dijo'
PARTIAL_HEADERS = b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"


def source_address(i: int, per_address: int) -> str:
    """127.0.0.2, 127.0.0.3, ... then 127.0.1.2, ...: ``per_address`` connections each."""
    k = i // per_address
    return f"127.0.{k // 250}.{2 + k % 250}"


def open_stalled(port: int, n: int, per_address: int, socks: List[socket.socket]) -> None:
    """Appends to ``socks`` as it goes, so that the caller closes them whatever happens."""
    for i in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10,
                                        source_address=(source_address(i, per_address), 0))
        sock.sendall(PARTIAL_HEADERS if i % 4 == 3 else PARTIAL_BODY)
        socks.append(sock)


def probe(url: str, n: int) -> Dict[str, Dict[str, object]]:
    """``n`` requests to each endpoint, each on a new connection: statuses and latencies."""
    import httpx

    calls = {"health": lambda c: c.get(f"{url}/health"),
             "translate": lambda c: c.post(f"{url}/translate", json={"text": "Y dijo Dios: Sea la luz."})}
    out: Dict[str, Dict[str, object]] = {}
    for name, call in calls.items():
        statuses: Dict[str, int] = {}
        latencies = []
        for _ in range(n):
            t0 = time.monotonic()
            try:
                with httpx.Client(timeout=10) as client:
                    key = str(call(client).status_code)
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            latencies.append(time.monotonic() - t0)
            statuses[key] = statuses.get(key, 0) + 1
        out[name] = {"statuses": statuses, "p50_ms": round(statistics.median(latencies) * 1000, 1),
                     "max_ms": round(max(latencies) * 1000, 1)}
    return out


def server_files_and_rss(pid: int) -> Dict[str, Optional[float]]:
    try:
        files = len(os.listdir(f"/proc/{pid}/fd"))
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {"open_files": None, "rss_mb": None}
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return {"open_files": files, "rss_mb": round(int(match.group(1)) / 1024, 1) if match else None}


def measure(model: str, n: int, args: argparse.Namespace) -> Dict[str, object]:
    socks: List[socket.socket] = []
    with serve_process(model, shlex.split(args.server_args), open_files=args.server_nofile,
                       log_level="critical") as server:
        try:
            before = server_files_and_rss(server.proc.pid)
            t0 = time.monotonic()
            error = None
            try:
                open_stalled(server.port, n, args.per_address, socks)
            except OSError as exc:  # this side's own file limit, most likely
                error = f"opened {len(socks)}: {exc}"
            opened = time.monotonic() - t0
            time.sleep(1.0)  # the server reads them all
            during = server_files_and_rss(server.proc.pid)
            result: Dict[str, object] = {"stalled": n, "open_error": error, "open_seconds": round(opened, 2),
                                         "server_before": before, "server_during": during}
            result.update(probe(server.url, args.probes))
            result["stalled_waiting"] = sum(waiting(s) for s in socks)
            return result
        finally:
            for sock in socks:
                sock.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(REPO / "runs" / "quickstart"))
    ap.add_argument("--counts", default="100,500,1000,2000", help="stalled connections per round")
    ap.add_argument("--probes", type=int, default=10, help="requests per endpoint and round")
    ap.add_argument("--per-address", type=int, default=50, help="stalled connections per source address")
    ap.add_argument("--server-args", default="--read-timeout 120",
                    help="more rnmt serve options, one string (default: %(default)s)")
    ap.add_argument("--server-nofile", type=int, help="the server's soft limit on open files")
    ap.add_argument("--json")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    if max(counts) > MAX_COUNT:
        ap.error(f"at most {MAX_COUNT} stalled connections")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results = {"ulimit_n": hard, "server_nofile": args.server_nofile or hard, "server_args": args.server_args,
               "rounds": []}
    for n in counts:
        row = measure(args.model, n, args)
        results["rounds"].append(row)
        print(f"{n:6d} stalled: health {row['health']}  translate {row['translate']}  "
              f"still waiting {row['stalled_waiting']}  server {row['server_during']}"
              + (f"  ({row['open_error']})" if row["open_error"] else ""), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
