"""rnmt export RUN_OR_CHECKPOINT --out DIR [--int8] [--shortlists] [--force] [--opset N] [--web DIR]

Writes the model as ONNX graphs (encoder, decoder initial state, one decoder step) with its
sentencepiece models and a manifest, for translation without PyTorch (docs/deploy.md,
docs/export-format.md). Each graph is checked against the model with onnxruntime before
anything is written; ``--out`` is written atomically and a non-empty one is replaced only
with ``--force``. ``--web DIR`` also writes a static in-browser page (`rnmt.web.command`).
"""

from __future__ import annotations

import argparse
import sys
import time


def add_arguments(p: argparse.ArgumentParser) -> None:
    from rnmt.export.onnx_writer import DEFAULT_OPSET
    from rnmt.web.command import add_arguments as add_web_arguments

    p.add_argument("model", metavar="RUN_OR_CHECKPOINT", nargs="?",
                   help="training output directory or checkpoint file (none with --web over an existing export)")
    p.add_argument("--out", help="the export directory to write")
    p.add_argument("--int8", action="store_true",
                   help="quantise the graphs' weight matrices to int8 (onnxruntime's dynamic quantisation)")
    p.add_argument("--shortlists", action="store_true",
                   help="also write the step without its output layer and that layer (step_readout.onnx, "
                        "output_*.npy), so that the runtime can search over lexical shortlists (--shortlist)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.add_argument("--opset", type=int, default=DEFAULT_OPSET, help=f"ONNX opset (default {DEFAULT_OPSET})")
    add_web_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rnmt.errors import UserError
    from rnmt.web import command as web

    plan = web.plan(args.model, args.out, args.web)
    if plan.model is None:  # the page of an existing export
        web.write(plan, args.force, args.web_modules)
        return 0
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise UserError(f"rnmt export needs {exc.name} (pip install 'rnmt[export]')") from None
    from rnmt.export.exporter import export

    start = time.perf_counter()
    manifest = export(plan.model, plan.out, int8=args.int8, force=args.force, opset=args.opset,
                      shortlists=args.shortlists)
    worst = max(manifest["parity"].values())
    print(f"exported {manifest['architecture']} ({manifest['precision']}) to {plan.out} in "
          f"{time.perf_counter() - start:.1f} s; largest difference from PyTorch {worst:.2g}", file=sys.stderr)
    web.write(plan, args.force, args.web_modules)
    return 0
