"""rnmt serve --model DIR_OR_CHECKPOINT [--host 127.0.0.1] [--port 8000] ...: an HTTP translation server."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys

import torch

from rnmt.errors import UserError
from rnmt.serve.settings import ServeSettings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="training output directory or checkpoint file")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--threads", type=int, help="CPU threads of the model (default: torch's)")
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
    lim.add_argument("--timeout", type=float, default=120.0, help="seconds a request may wait (default: 120)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    return ServeSettings(batching=args.batching, max_wait_ms=args.max_wait_ms, max_batch_tokens=args.max_batch_tokens,
                         max_batch_sentences=args.max_batch_sentences, max_body_bytes=args.max_body_bytes,
                         max_texts=args.max_texts, max_chars=args.max_chars, max_beam=args.max_beam,
                         request_timeout=args.timeout, threads=args.threads).check()


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


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from rnmt.serve.app import create_app
    except ImportError as exc:
        raise UserError(f"rnmt serve needs the 'serve' extra (pip install 'rnmt[serve]'): {exc}") from None
    from rnmt.device import pick_device
    from rnmt.models import load_model

    settings = settings_from_args(args)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    device = pick_device(args.device)
    loaded = load_model(args.model, device)  # a bad path fails here, before anything listens
    if device.type == "cpu":  # build or load the C++ kernels now, not during the first request
        from rnmt import kernels

        kernels.extension()
    app = create_app(loaded, settings, device)
    sock = listen(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if not _is_loopback(args.host):
        print(f"warning: listening on {args.host}, reachable from other machines", file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {args.model} on http://{shown}:{port}/ (batching {'on' if settings.batching else 'off'}, "
          f"{settings.threads or torch.get_num_threads()} threads); Ctrl-C stops", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level=args.log_level, access_log=args.log_level == "debug",
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    server.run(sockets=[sock])
    return 0
