"""The three graphs of a model written into a directory: encoder.onnx, init.onnx, step.onnx."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Tuple

import torch
from torch import Tensor

from rnmt.export.examples import TRACE_BATCH, TRACE_BEAM, Shapes, previous_tokens, source_batch, trace_length
from rnmt.export.graphs import EncoderGraph, InitGraph, Signature, StepGraph, signature
from rnmt.export.onnx_writer import dynamic_axes, write_graph
from rnmt.models.base import TranslationModel, repeat_rows

GRAPH_FILES = {"encoder": "encoder.onnx", "init": "init.onnx", "step": "step.onnx"}


def decoder_rows(model: TranslationModel, memory: Dict[str, Tensor], beam: int,
                 shares: bool) -> Tuple[Dict[str, Tensor], Dict[str, Tensor]]:
    """(state, memory) for ``beam`` hypotheses per source row, as rnmt's beam search lays
    them out: state rows b*K..b*K+K-1 belong to memory row b; the memory itself repeated
    K times unless the model's step shares it (``beam_shares_memory``)."""
    state = repeat_rows(model.init_state(memory), beam)
    return state, (memory if shares else repeat_rows(memory, beam))


def write_graphs(model: TranslationModel, out: Path, src_vocab: int, tgt_vocab: int, opset: int) -> Signature:
    """Trace and write ``model``'s three graphs into ``out``; returns their `Signature`."""
    length = trace_length(model)
    src, src_mask = source_batch(Shapes(TRACE_BATCH, length, TRACE_BEAM), src_vocab)
    sig = signature(model, src, src_mask)
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        state, step_memory = decoder_rows(model, memory, TRACE_BEAM, sig.beam_shares_memory)
        rows = TRACE_BATCH * TRACE_BEAM
        prev = previous_tokens(rows, tgt_vocab)
        outputs = StepGraph(model, sig)(prev, *state.values(), *step_memory.values())
    mem_rows = TRACE_BATCH if sig.beam_shares_memory else rows

    enc_in, enc_out = sig.encoder_io()
    encoder = EncoderGraph.build(model, sig.memory, src, src_mask)
    axes = {**dynamic_axes(enc_in, (src, src_mask), "B", TRACE_BATCH, length),
            **dynamic_axes(enc_out, memory.values(), "B", TRACE_BATCH, length)}
    write_graph(encoder, (src, src_mask), enc_in, enc_out, axes, out / GRAPH_FILES["encoder"], opset,
                encoder.tracing())

    init_in, init_out = sig.init_io()
    first = model.init_state(memory)
    axes = {**dynamic_axes(init_in, memory.values(), "B", TRACE_BATCH, length),
            **dynamic_axes(init_out, first.values(), "B", TRACE_BATCH, length)}
    write_graph(InitGraph(model, sig), tuple(memory.values()), init_in, init_out, axes,
                out / GRAPH_FILES["init"], opset)

    step_in, step_out = sig.step_io()
    n = len(sig.state)
    axes = {**dynamic_axes(step_in[:n + 1], (prev, *state.values()), "N", rows, length),
            **dynamic_axes(step_in[n + 1:], step_memory.values(), "B" if sig.beam_shares_memory else "N",
                           mem_rows, length),
            **dynamic_axes(step_out, outputs, "N", rows, length)}
    write_graph(StepGraph(model, sig), (prev, *state.values(), *step_memory.values()), step_in, step_out, axes,
                out / GRAPH_FILES["step"], opset)
    return sig
