"""The graphs of a model written into a directory: encoder.onnx, init.onnx, step.onnx and,
for a runtime searching over lexical shortlists (``rnmt export --shortlists``),
step_readout.onnx (the step without its output layer) with the output layer's matrix and
bias beside it as .npy files.

The step is traced a few decoder steps in (`WARM_STEPS`), not on the initial state: a state
that grows with the output (the Transformer's cached keys and values, [N, T, d]) is then
traced with a length T of its own, found by comparing the state's shapes before and after,
and named as a dynamic axis (``T`` in, ``T_next`` out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Tuple

import numpy as np
import torch
from torch import Tensor

from rnmt.export.examples import TRACE_BATCH, TRACE_BEAM, Shapes, previous_tokens, source_batch, trace_length
from rnmt.export.graphs import EncoderGraph, InitGraph, ReadoutGraph, Signature, StepGraph, signature
from rnmt.export.onnx_writer import dynamic_axes, write_graph
from rnmt.models.base import TranslationModel, repeat_rows
from rnmt.search.shortlist import output_layer, readout_view

GRAPH_FILES = {"encoder": "encoder.onnx", "init": "init.onnx", "step": "step.onnx"}
READOUT_FILE = "step_readout.onnx"  # with --shortlists
OUTPUT_LAYER_FILES = {"weight": "output_weight.npy", "bias": "output_bias.npy"}  # [V, d] and [V], fp32
WARM_STEPS = 2  # decoder steps taken before the step is traced


def decoder_rows(model: TranslationModel, memory: Dict[str, Tensor], beam: int,
                 shares: bool) -> Tuple[Dict[str, Tensor], Dict[str, Tensor]]:
    """(state, memory) for ``beam`` hypotheses per source row, as rnmt's beam search lays
    them out: state rows b*K..b*K+K-1 belong to memory row b; the memory itself repeated
    K times unless the model's step shares it (``beam_shares_memory``)."""
    state = repeat_rows(model.init_state(memory), beam)
    return state, (memory if shares else repeat_rows(memory, beam))


def growing_axes(before: Dict[str, Tensor], after: Dict[str, Tensor], name: str) -> Dict[str, Dict[int, str]]:
    """``{prefix.state name: {dim: name}}`` for the dims of the state that grew between two steps."""
    return {key: {k: name for k in range(1, a.dim()) if a.shape[k] != before[key].shape[k]}
            for key, a in after.items()}


def _merge(*axes: Dict[str, Dict[int, str]]) -> Dict[str, Dict[int, str]]:
    merged: Dict[str, Dict[int, str]] = {}
    for one in axes:
        for name, dims in one.items():
            merged.setdefault(name, {}).update(dims)
    return merged


def _prefixed(prefix: str, axes: Dict[str, Dict[int, str]]) -> Dict[str, Dict[int, str]]:
    return {f"{prefix}.{k}": v for k, v in axes.items()}


def graph_files(readout: bool) -> Dict[str, str]:
    """The graphs an export holds: the three, and the readout step where ``readout``."""
    return {**GRAPH_FILES, "readout": READOUT_FILE} if readout else dict(GRAPH_FILES)


def write_graphs(model: TranslationModel, out: Path, src_vocab: int, tgt_vocab: int, opset: int,
                 readout: bool = False) -> Signature:
    """Trace and write ``model``'s three graphs into ``out``, and its readout step where
    ``readout``; returns their `Signature`."""
    length = trace_length(model)
    src, src_mask = source_batch(Shapes(TRACE_BATCH, length, TRACE_BEAM), src_vocab)
    sig = signature(model, src, src_mask)
    rows = TRACE_BATCH * TRACE_BEAM
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        first = model.init_state(memory)
        state, step_memory = decoder_rows(model, memory, TRACE_BEAM, sig.beam_shares_memory)
        warm = state
        for j in range(WARM_STEPS):
            _, warm, _ = model.step(previous_tokens(rows, tgt_vocab, seed=50 + j), warm, step_memory)
        prev = previous_tokens(rows, tgt_vocab)
        step_args = (prev, *(warm[n] for n in sig.state), *step_memory.values())
        outputs = StepGraph(model, sig)(*step_args)
        _, after, _ = model.step(prev, warm, step_memory)
    mem_rows, mem_axis = (TRACE_BATCH, "B") if sig.beam_shares_memory else (rows, "N")

    enc_in, enc_out = sig.encoder_io()
    encoder = EncoderGraph(model, sig).with_loops(src, src_mask)
    axes = _merge(dynamic_axes(enc_in, (src, src_mask), "B", TRACE_BATCH, length),
                  dynamic_axes(enc_out, memory.values(), "B", TRACE_BATCH, length))
    write_graph(encoder, (src, src_mask), enc_in, enc_out, axes, out / GRAPH_FILES["encoder"], opset,
                encoder.tracing())

    init_in, init_out = sig.init_io()
    init = InitGraph(model, sig).with_loops(*memory.values())
    axes = _merge(dynamic_axes(init_in, memory.values(), "B", TRACE_BATCH, length),
                  dynamic_axes(init_out, first.values(), "B", TRACE_BATCH, length))
    write_graph(init, tuple(memory.values()), init_in, init_out, axes, out / GRAPH_FILES["init"], opset,
                init.tracing())

    step_in, step_out = sig.step_io()
    n = len(sig.state)
    step = StepGraph(model, sig).with_loops(*step_args)
    axes = _merge(dynamic_axes(step_in[:n + 1], step_args[:n + 1], "N", rows, length),
                  dynamic_axes(step_in[n + 1:], step_memory.values(), mem_axis, mem_rows, length),
                  dynamic_axes(step_out, outputs, "N", rows, length),
                  _prefixed("state", growing_axes(state, warm, "T")),
                  _prefixed("next_state", growing_axes(warm, after, "T_next")))
    write_graph(step, step_args, step_in, step_out, axes, out / GRAPH_FILES["step"], opset, step.tracing())
    if not readout:
        return sig

    readout_in, readout_out = sig.readout_io()
    view = readout_view(model, tgt_vocab)
    graph = ReadoutGraph(view, sig).with_loops(*step_args)
    with torch.no_grad():
        readout_outputs = graph(*step_args)
    axes = _merge(dynamic_axes(readout_in[:n + 1], step_args[:n + 1], "N", rows, length),
                  dynamic_axes(readout_in[n + 1:], step_memory.values(), mem_axis, mem_rows, length),
                  dynamic_axes(readout_out, readout_outputs, "N", rows, length),
                  _prefixed("state", growing_axes(state, warm, "T")),
                  _prefixed("next_state", growing_axes(warm, after, "T_next")))
    write_graph(graph, step_args, readout_in, readout_out, axes, out / READOUT_FILE, opset, graph.tracing())
    return sig


def write_output_layer(model: TranslationModel, out: Path, tgt_vocab: int) -> None:
    """The output layer's matrix [V, d] and bias [V] (zeros where it has none) as fp32 .npy
    files: what the runtime multiplies the readout step's output by, a shortlist's rows only."""
    layer = output_layer(model, tgt_vocab)
    weight = layer.weight.detach().float().cpu().numpy()
    bias = (np.zeros(weight.shape[0], dtype=np.float32) if layer.bias is None
            else layer.bias.detach().float().cpu().numpy())
    np.save(out / OUTPUT_LAYER_FILES["weight"], np.ascontiguousarray(weight), allow_pickle=False)
    np.save(out / OUTPUT_LAYER_FILES["bias"], bias, allow_pickle=False)

