"""`rnmt export`: a checkpoint as three ONNX graphs, its vocabularies and a manifest.

    export("runs/quickstart", "exported/")   # -> the manifest written

Steps: load the plain model (`rnmt.export.source`), trace and write the graphs
(`rnmt.export.writing`), check them against the model with onnxruntime on other shapes than
the trace's (`rnmt.export.parity`; a graph off by more than `TOLERANCE` is an error, never a
file), quantise them with ``int8`` (`rnmt.export.quantize`), copy the sentencepiece models
and write the manifest (`rnmt.export.manifest`), all in a temporary directory that becomes
``out`` at the end (`rnmt.export.directory`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Dict

import torch

from rnmt.errors import UserError
from rnmt.export.directory import check_target, staged
from rnmt.export.manifest import MANIFEST, build_manifest, file_hashes, vocab_files
from rnmt.export.onnx_writer import DEFAULT_OPSET
from rnmt.export.parity import max_differences
from rnmt.export.quantize import quantize_graph
from rnmt.export.source import load_plain
from rnmt.export.writing import graph_files, write_graphs, write_output_layer
from rnmt_runtime.manifest import file_sha256  # the checkpoint's fingerprint: the SHA-256 of its bytes

TOLERANCE = 1e-4  # fp32 graphs: largest |onnxruntime - PyTorch| accepted (measured: below 1e-5)
MIN_OPSET, MAX_OPSET = 17, 21  # the opsets the export is tested at and onnxruntime runs


def export(path: str | Path, out: str | Path, int8: bool = False, force: bool = False,
           opset: int = DEFAULT_OPSET, shortlists: bool = False) -> Dict[str, Any]:
    """Export the model of ``path`` (a run directory or a checkpoint) into ``out``; returns
    the manifest. ``shortlists``: also the readout step and the output layer, which a
    runtime searching over lexical shortlists needs. A `UserError` leaves ``out`` as it was."""
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UserError(f"--opset {opset}: the export supports opsets {MIN_OPSET} to {MAX_OPSET}")
    out = Path(out)
    check_target(out, force)  # before the model loads: a refused --out costs nothing
    loaded = load_plain(path)
    with staged(out, force) as tmp:
        with tempfile.TemporaryDirectory(dir=tmp.parent, prefix=f".{out.name}.fp32.") as fp32_dir:
            fp32 = Path(fp32_dir)
            torch.manual_seed(0)
            sig = _traced(loaded, fp32, opset, shortlists)
            parity = _compared(loaded, sig, fp32)
            worst = max(parity, key=lambda name: parity[name])
            if parity[worst] > TOLERANCE:
                raise UserError(f"{loaded.path}: the {loaded.config.model.arch} model cannot be exported: its "
                                f"{worst} graph differs from the model by {parity[worst]:.3g} on shapes other than "
                                f"the traced ones (a branch or loop on values or sizes in Python, which tracing "
                                f"freezes)")
            for file in graph_files(shortlists).values():
                if int8:
                    _quantized(loaded, fp32 / file, tmp / file)
                else:
                    (fp32 / file).replace(tmp / file)
        if int8:
            parity = _compared(loaded, sig, tmp)
        if shortlists:
            write_output_layer(loaded.model, tmp, loaded.tgt_vocab.size)
        names = vocab_files(loaded)
        loaded.src_vocab.save(tmp / names["src"])
        loaded.tgt_vocab.save(tmp / names["tgt"])
        manifest = build_manifest(loaded, sig, file_sha256(loaded.path), opset, "int8" if int8 else "fp32",
                                  file_hashes(tmp), {k: float(v) for k, v in parity.items()}, shortlists)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def _traced(loaded, directory: Path, opset: int, readout: bool):
    """`write_graphs`, whose failure (an operation the exporter or the opset does not take)
    is a one-line error naming the checkpoint, not PyTorch's traceback."""
    from rnmt.io.checkpoint_files import first_line

    try:
        with torch.no_grad():
            return write_graphs(loaded.model, directory, loaded.src_vocab.size, loaded.tgt_vocab.size, opset,
                                readout)
    except UserError:
        raise
    except Exception as exc:  # the tracer and the exporter raise many types
        raise UserError(f"{loaded.path}: the {loaded.config.model.arch} model could not be exported at opset "
                        f"{opset} ({type(exc).__name__}: {first_line(exc)})") from None


def _compared(loaded, sig, directory: Path) -> Dict[str, float]:
    """`max_differences`, where onnxruntime refusing a graph on an untraced shape (an axis
    the trace froze) is the one-line reason the model cannot be exported."""
    from rnmt.io.checkpoint_files import first_line

    try:
        return max_differences(loaded.model, sig, directory, loaded.src_vocab.size, loaded.tgt_vocab.size)
    except Exception as exc:  # onnxruntime's own error types
        raise UserError(f"{loaded.path}: the {loaded.config.model.arch} model cannot be exported: onnxruntime "
                        f"refuses its graphs on shapes other than the traced ones ({first_line(exc)})") from None


def _quantized(loaded, src: Path, dst: Path) -> None:
    from rnmt.io.checkpoint_files import first_line

    try:
        quantize_graph(src, dst)
    except Exception as exc:  # the quantiser's own error types
        raise UserError(f"{loaded.path}: onnxruntime's quantiser failed on {src.name} ({type(exc).__name__}: "
                        f"{first_line(exc)}); export without --int8") from None
