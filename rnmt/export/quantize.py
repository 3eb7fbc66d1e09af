"""int8 graphs: onnxruntime's dynamic quantisation of the weight matrices.

``quantize_dynamic`` stores the weights of every ``MatMul`` and ``Gemm`` as int8 (one scale
per output column, ``per_channel``) and quantises their activations per call; embeddings,
normalisations and element-wise gate arithmetic stay fp32. Per-column scales matter for
recurrent units: their fused input and recurrent matrices hold several gates side by side
whose ranges differ.

Only the graphs' top level is quantised: the products inside a walk over the source (the
encoder's recurrent products, Cseq2seq's re-reading in the step; `rnmt.export.loops`) stay
fp32. With ``EnableSubgraph``, onnxruntime 1.32's quantiser wrote loop bodies that its own
sessions refuse (a shape-inference conflict inside the ``Loop``). The decoder step of every
attentional model, where beam search spends its time, is all top level.
"""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path


def quantize_graph(src: Path, dst: Path) -> None:
    """Write the int8 version of the fp32 graph ``src`` to ``dst``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger("root").setLevel(logging.ERROR)  # the quantiser logs its advice at WARNING
    with contextlib.redirect_stdout(io.StringIO()):
        quantize_dynamic(str(src), str(dst), op_types_to_quantize=["MatMul", "Gemm"], per_channel=True,
                         weight_type=QuantType.QInt8)
