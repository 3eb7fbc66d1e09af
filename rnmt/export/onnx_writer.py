"""Writing one wrapper module (`rnmt.export.graphs`) as an ONNX file with named dynamic axes.

The exporter is PyTorch's TorchScript-based one (``dynamo=False``), on a module traced
first with `torch.jit.trace`. Why not the newer ``torch.export`` one (``dynamo=True``): a
recurrent encoder walks the source in a loop, which `torch.export` unrolls to the traced
length or rejects, while TorchScript keeps a scripted loop (`rnmt.export.loops`) as an
ONNX ``Loop`` over a dynamic length; and the newer exporter has written ``nn.GRU`` with
the wrong ``linear_before_reset`` and frozen bidirectional time axes (pytorch#189225,
#191855). Every graph is checked against the PyTorch model by `rnmt.export.parity` on
shapes other than the traced ones, so a frozen axis cannot pass unnoticed.

Tracing runs with autograd on: rnmt's per-vocabulary token tables
(`rnmt.modules.token_table`) apply only without it, and would be traced as a
[vocabulary, width] constant per graph; with it, the graph keeps the products.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Dict, Iterable, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

DEFAULT_OPSET = 17  # Loop, LayerNormalization (17) and every operator the models use; onnxruntime >= 1.12


def dynamic_axes(names: Sequence[str], tensors: Iterable[Tensor], batch: str, batch_size: int,
                 src_len: int) -> Dict[str, Dict[int, str]]:
    """Named dynamic axes of ``tensors``: the first (``batch``: B or N), and every other of
    the traced source length (``S``). The example sizes are chosen apart from the model's
    own sizes (`rnmt.export.exporter.EXAMPLE`), so a width never reads as a length."""
    axes = {}
    for name, tensor in zip(names, tensors):
        dims = {}
        for k, size in enumerate(tensor.shape):
            if k == 0 and size == batch_size:
                dims[k] = batch
            elif k > 0 and size == src_len:
                dims[k] = "S"
        axes[name] = dims
    return axes


def write_graph(module: nn.Module, args: Tuple[Tensor, ...], input_names: Sequence[str],
                output_names: Sequence[str], axes: Dict[str, Dict[int, str]], path: Path, opset: int,
                scripting: Optional[contextlib.AbstractContextManager] = None) -> None:
    """Trace ``module`` on ``args`` (inside ``scripting``, e.g. `EncoderGraph.tracing`) and
    write it to ``path``. PyTorch's own warnings of the trace (constants it folds, the
    exporter's deprecation notice) are not the user's business and are kept quiet."""
    module.eval()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.enable_grad():
        warnings.simplefilter("ignore")
        with scripting or contextlib.nullcontext():
            traced = torch.jit.trace(module, args, check_trace=False, strict=False)
        torch.onnx.export(traced, args, str(path), input_names=list(input_names), output_names=list(output_names),
                          dynamic_axes=axes, opset_version=opset, dynamo=False, do_constant_folding=True)
    declare_inputs(path, input_names, args, axes)


def declare_inputs(path: Path, names: Sequence[str], args: Tuple[Tensor, ...],
                   axes: Dict[str, Dict[int, str]]) -> None:
    """Give the graph at ``path`` every input of ``names``, in that order: the exporter drops
    an input no operation reads (the step of a model whose memory holds a tensor only the
    initial state reads), and a reader feeds every memory tensor to every graph that the
    contract says takes it. An unread input costs nothing in onnxruntime."""
    import onnx
    from onnx import helper

    graph_file = onnx.load(str(path))
    graph = graph_file.graph
    present = {i.name: i for i in graph.input}
    if all(name in present for name in names) and [i.name for i in graph.input][:len(names)] == list(names):
        return
    ordered = []
    for name, tensor in zip(names, args):
        if name in present:
            ordered.append(present[name])
            continue
        dims = [axes.get(name, {}).get(k, size) for k, size in enumerate(tensor.shape)]
        elem = helper.np_dtype_to_tensor_dtype(tensor.detach().numpy().dtype)
        ordered.append(helper.make_tensor_value_info(name, elem, dims))
    rest = [i for i in graph.input if i.name not in set(names)]
    del graph.input[:]
    graph.input.extend(ordered + rest)
    onnx.save(graph_file, str(path))
