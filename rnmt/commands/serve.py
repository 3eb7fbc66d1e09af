"""rnmt serve --model DIR_OR_CHECKPOINT [--host 127.0.0.1] [--port 8000] ...: an HTTP translation server.

The flags other than the model's, the listening socket and the server itself are shared
with the runtime's server (`rnmt_runtime.serving.command`); an export directory as
``--model`` is served by the runtime without torch (rnmt.cli hands it over first).
"""

from __future__ import annotations

import argparse
import socket

import torch

from rnmt.commands import checks, shortlist
from rnmt.errors import UserError
from rnmt.serve.settings import ServeSettings
from rnmt_runtime.errors import ExportError
from rnmt_runtime.serving import command
from rnmt_runtime.serving.command import LOOPBACK_NAMES, graceful_server, raise_open_files_limit  # noqa: F401


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action=checks.Once,
                   help="training output directory or checkpoint file (an export directory: served by the "
                        "runtime, without torch; docs/deploy.md)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    p.add_argument("--int8", action="store_true",
                   help="decode with int8 matrix products (CPU; rnmt/int8.py, docs/performance.md)")
    p.add_argument("--threads", type=int, help="CPU threads of the model (default: torch's)")
    shortlist.add_use_arguments(p, "sampling requests draw from the whole vocabulary")
    command.add_server_arguments(p)


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    return command.settings_from_args(args, ServeSettings)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket, or a one-line `UserError` (port taken, unknown address)."""
    try:
        return command.listen(host, port)
    except ExportError as exc:
        raise UserError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    checks.given_once(args)
    try:
        from rnmt.serve.app import create_app
    except ImportError as exc:
        raise UserError(f"rnmt serve needs the 'serve' extra (pip install 'rnmt[serve]'): {exc}") from None
    from rnmt.device import pick_device
    from rnmt.int8 import decoding_device, quantize_for_decoding
    from rnmt.models import load_model
    from rnmt.plan.apply import accelerate, apply_process
    from rnmt.plan.decoding import decoding_plan

    settings = settings_from_args(args)
    shortlist.check_use_arguments(args)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    device = decoding_device(args.device) if args.int8 else pick_device(args.device)
    plan = decoding_plan(args.model, device)  # the run's recorded plan (rnmt/plan/decoding.py)
    apply_process(plan)
    loaded = load_model(args.model, device)  # a bad path fails here, before anything listens
    loaded.model = accelerate(loaded.model, plan)
    if args.int8:
        quantize_for_decoding(loaded.model)
    candidates = None  # the lexical shortlist, if any
    if args.shortlist:
        from rnmt.search.shortlist import load_shortlist

        candidates = load_shortlist(args.shortlist, loaded.src_vocab, loaded.tgt_vocab)
        candidates = candidates.with_sizes(*args.shortlist_sizes)
    if device.type == "cpu" and plan.kernels.value:  # build or load the C++ kernels now, not during the first request
        from rnmt import kernels

        kernels.extension()
    app = create_app(loaded, settings, device, candidates)
    try:
        return command.serve(app, settings, args, args.model, settings.threads or torch.get_num_threads())
    except ExportError as exc:
        raise UserError(str(exc)) from None
