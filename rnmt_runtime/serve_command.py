"""``rnmt serve --model EXPORT_DIR``: rnmt serve's HTTP API over an export directory, without
torch (`rnmt_runtime.serving`). Needs FastAPI and uvicorn (``pip install 'rnmt-runtime[serve]'``)."""

from __future__ import annotations

import argparse

from rnmt_runtime.errors import ExportError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="an export directory (rnmt export)")
    p.add_argument("--threads", type=int,
                   help="CPU threads: this many batches translated at once, one thread each (default: every core)")
    p.add_argument("--device", default="auto", help="auto | cpu (the runtime decodes on the CPU)")
    from rnmt_runtime import shortlist

    shortlist.add_arguments(p, "the export needs rnmt export --shortlists; sampling requests draw from the whole "
                               "vocabulary")
    from rnmt_runtime.serving.command import add_server_arguments  # the flags need nothing of FastAPI

    add_server_arguments(p)


def run(args: argparse.Namespace) -> int:
    if args.device not in ("auto", "cpu"):
        raise ExportError(f"--device {args.device}: the runtime decodes on the CPU (auto | cpu)")
    try:
        from rnmt_runtime.serving.command import serve, settings_from_args
        from rnmt_runtime.serving.runtime import create_runtime_app
    except ImportError as exc:
        raise ExportError(f"rnmt serve needs FastAPI and uvicorn (pip install 'rnmt-runtime[serve]'): {exc}") from None
    from rnmt_runtime.translator import Options, Translator, available_cores

    settings = settings_from_args(args)
    # One onnxruntime thread a batch and several batches at once: a beam search makes many
    # small calls, which one thread each runs better than several threads share
    # (docs/deploy.md, "Measured").
    workers = settings.threads or available_cores()
    translator = Translator(args.model, threads=1)  # a bad export fails here, before listening
    translator.plan(Options())  # its defaults asking for what the model cannot (coverage without attention)
    if args.shortlist:
        translator.use_shortlist(args.shortlist, *args.shortlist_sizes)  # sizes below 0: an ExportError
    app = create_runtime_app(translator, settings, workers)
    return serve(app, settings, args, args.model, workers)
