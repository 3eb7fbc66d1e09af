"""What ``rnmt serve`` and the runtime's ``rnmt serve --model EXPORT_DIR`` share: the flags of
batching, request limits and access, the settings made from them, the listening socket,
and uvicorn's server with a graceful stop. Mistakes are one-line `ExportError`s (rnmt's
command shows them as its `UserError`s)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import resource
import signal
import socket
import sys

from rnmt_runtime.errors import ExportError as UserError
from rnmt_runtime.limits import MAX_OUTPUT_TOKENS
from rnmt_runtime.serving.settings import ServeSettings


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """--host, --port, the batching, limit and access flags, --log-level."""
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    b = p.add_argument_group("dynamic batching")
    b.add_argument("--no-batching", dest="batching", action="store_false",
                   help="translate one request at a time")
    b.add_argument("--max-wait-ms", type=float, default=5.0,
                   help="how long a batch waits for more requests (default: 5)")
    b.add_argument("--max-batch-tokens", type=int, default=4000, help="source subwords per batch (default: 4000)")
    b.add_argument("--max-batch-sentences", type=int, default=64, help="sentences per batch (default: 64)")
    lim = p.add_argument_group("request limits")
    lim.add_argument("--max-body-bytes", type=int, default=1 << 20, help="request body size (default: 1 MiB)")
    lim.add_argument("--max-texts", type=int, default=64, help="texts per request (default: 64)")
    lim.add_argument("--max-chars", type=int, default=2000, help="characters per text (default: 2000)")
    lim.add_argument("--max-beam", type=int, default=16, help="largest beam and nbest (default: 16)")
    lim.add_argument("--max-constraints", type=int, default=16,
                     help="constraint phrases per text; over: 422 (default: 16)")
    lim.add_argument("--max-constraint-tokens", type=int, default=64,
                     help="target subwords of one text's constraint phrases together; over: 422 (default: 64; "
                          "never more than --max-output-tokens minus one)")
    lim.add_argument("--timeout", type=float, default=120.0,
                     help="seconds a request may take; then 504 and its search stops (default: 120)")
    lim.add_argument("--max-request-tokens", type=int, default=1000,
                     help="source subwords per request, end marks included; over: 413 (default: 1000)")
    lim.add_argument("--max-output-tokens", type=int, default=MAX_OUTPUT_TOKENS,
                     help=f"longest output in subwords, whatever the source (default: {MAX_OUTPUT_TOKENS}, "
                          f"as rnmt translate)")
    lim.add_argument("--max-queue", type=int, default=64,
                     help="requests waiting for the model; over: 503 with Retry-After (default: 64)")
    lim.add_argument("--max-connections", type=int, default=256,
                     help="requests in progress at once, counted once fully received; over: 503 (default: 256)")
    lim.add_argument("--read-timeout", type=float, default=10.0,
                     help="seconds a request may take to arrive, headers and body; then 408 and the "
                          "connection is closed (default: 10)")
    lim.add_argument("--max-incomplete-per-client", type=int, default=64,
                     help="once the requests still arriving hold half the open-file limit, how many one client "
                          "address may keep; its oldest beyond that get 408 (default: 64)")
    lim.add_argument("--shutdown-grace", type=float, default=5.0,
                     help="on SIGTERM, seconds the batch in progress may finish; the waiting requests "
                          "get 503 at once (default: 5)")
    sec = p.add_argument_group("access")
    sec.add_argument("--api-key", default=os.environ.get("RNMT_API_KEY"),
                     help="require 'Authorization: Bearer KEY' for /translate and /model "
                          "(default: $RNMT_API_KEY; the page, /static and /health stay open)")
    sec.add_argument("--allowed-host", dest="allowed_hosts", action="append", metavar="NAME",
                     help="a Host header name this server answers (repeatable; '*' for any). Default: "
                          "localhost, 127.0.0.1 and ::1 on a loopback address, any name otherwise")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def settings_from_args(args: argparse.Namespace, settings: type = ServeSettings) -> ServeSettings:
    """The checked settings of the flags (``settings``: the class, rnmt's own for rnmt serve)."""
    return settings(batching=args.batching, max_wait_ms=args.max_wait_ms, max_batch_tokens=args.max_batch_tokens,
                         max_batch_sentences=args.max_batch_sentences, max_body_bytes=args.max_body_bytes,
                         max_texts=args.max_texts, max_chars=args.max_chars, max_beam=args.max_beam,
                         max_constraints=args.max_constraints, max_constraint_tokens=args.max_constraint_tokens,
                         request_timeout=args.timeout, threads=args.threads,
                         max_request_tokens=args.max_request_tokens, max_output_tokens=args.max_output_tokens,
                         max_queue=args.max_queue, max_connections=args.max_connections,
                         read_timeout=args.read_timeout, max_incomplete_per_client=args.max_incomplete_per_client,
                         shutdown_grace=args.shutdown_grace, api_key=args.api_key,
                         allowed_hosts=args.allowed_hosts or (LOOPBACK_NAMES if _is_loopback(args.host) else None),
                         ).check()


# The names a browser on this machine uses for a loopback server; anything else in the Host
# header of a request to 127.0.0.1 comes from a rebinding page.
LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"]


def listen(host: str, port: int) -> socket.socket:
    """A listening socket, or a one-line `UserError` (port taken, unknown address)."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"--host {host}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def raise_open_files_limit() -> None:
    """Every connection holds a file descriptor. Many systems start processes with a soft limit
    of 1024 and a far higher hard limit, which a process may raise its own soft limit to."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # an unlimited hard limit may be above what the kernel allows
            pass


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(app, settings: ServeSettings, args: argparse.Namespace, what: str, threads: int) -> int:
    """Listen as the flags say, print where, and serve ``app`` until SIGTERM or Ctrl-C."""
    from rnmt_runtime.serving.protocol import server_config

    raise_open_files_limit()
    sock = listen(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if not _is_loopback(args.host):
        print(f"warning: listening on {args.host}, reachable from other machines", file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {what} on http://{shown}:{port}/ (batching {'on' if settings.batching else 'off'}, "
          f"{threads} threads); Ctrl-C stops", file=sys.stderr, flush=True)
    config = server_config(app, settings, log_level=args.log_level, access_log=args.log_level == "debug",
                           timeout_graceful_shutdown=settings.shutdown_grace + 5)
    server = graceful_server(config, app.state.batcher, settings.shutdown_grace)
    server.run(sockets=[sock])
    return 0


DRAIN_QUIET_S = 0.3  # after SIGTERM, stop listening once no connection came or went for this long


def graceful_server(config, batcher, grace: float):
    """uvicorn's server, with SIGTERM/SIGINT first closing the batcher and draining.

    The waiting requests are answered 503 at once and the batch in progress gets ``grace``
    seconds. The socket keeps listening until the server is quiet (no connection opened or
    closed and no request started for ``DRAIN_QUIET_S``; at most ``grace`` seconds), so a
    request already sent but not yet read (still in the kernel's accept queue, or its bytes
    not yet parsed) is answered 503 rather than dropped, which uvicorn's own shutdown would
    do. Then uvicorn's graceful shutdown lets every response go out before the process
    exits. A second signal skips the drain.
    """
    import asyncio

    import uvicorn

    class Server(uvicorn.Server):
        draining = False

        def handle_exit(self, sig, frame) -> None:
            if self.draining or batcher.closing:
                super().handle_exit(sig, frame)
                return
            self.draining = True
            print(f"{signal.Signals(sig).name}: rejecting {batcher.pending} waiting request(s), finishing "
                  f"the batch in progress (at most {grace:g} s)", file=sys.stderr, flush=True)
            try:  # a signal handler interrupts the loop: let the loop itself close and drain
                loop = asyncio.get_running_loop()
            except RuntimeError:
                batcher.close(grace)
                super().handle_exit(sig, frame)
                return
            loop.call_soon_threadsafe(batcher.close, grace)
            loop.call_soon_threadsafe(lambda: loop.create_task(self._drain_then_exit(sig, frame)))

        async def _drain_then_exit(self, sig, frame) -> None:
            loop = asyncio.get_running_loop()
            state = self.server_state
            deadline = loop.time() + grace
            last, quiet_from = None, loop.time()
            while loop.time() < deadline and not self.should_exit:
                now = (state.total_requests, frozenset(map(id, state.connections)))
                if now != last:
                    last, quiet_from = now, loop.time()
                elif loop.time() - quiet_from >= DRAIN_QUIET_S:
                    break
                await asyncio.sleep(0.02)
            super().handle_exit(sig, frame)

    return Server(config)
