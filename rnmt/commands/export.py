"""rnmt export RUN_OR_CHECKPOINT --out DIR [--int8] [--force] [--opset N]

Writes the model as ONNX graphs (encoder, decoder initial state, one decoder step) with its
sentencepiece models and a manifest, for translation without PyTorch (docs/deploy.md,
docs/export-format.md). Each graph is checked against the model with onnxruntime before
anything is written; ``--out`` is written atomically and a non-empty one is replaced only
with ``--force``.
"""

from __future__ import annotations

import argparse
import sys
import time


def add_arguments(p: argparse.ArgumentParser) -> None:
    from rnmt.export.onnx_writer import DEFAULT_OPSET

    p.add_argument("model", metavar="RUN_OR_CHECKPOINT", help="training output directory or checkpoint file")
    p.add_argument("--out", required=True, help="the export directory to write")
    p.add_argument("--int8", action="store_true",
                   help="quantise the graphs' weight matrices to int8 (onnxruntime's dynamic quantisation)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.add_argument("--opset", type=int, default=DEFAULT_OPSET, help=f"ONNX opset (default {DEFAULT_OPSET})")


def run(args: argparse.Namespace) -> int:
    from rnmt.errors import UserError

    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise UserError(f"rnmt export needs {exc.name} (pip install 'rnmt[export]')") from None
    from rnmt.export.exporter import export

    start = time.perf_counter()
    manifest = export(args.model, args.out, int8=args.int8, force=args.force, opset=args.opset)
    worst = max(manifest["parity"].values())
    print(f"exported {manifest['architecture']} ({manifest['precision']}) to {args.out} in "
          f"{time.perf_counter() - start:.1f} s; largest difference from PyTorch {worst:.2g}", file=sys.stderr)
    return 0
