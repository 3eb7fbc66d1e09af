"""The written graphs run by onnxruntime against the PyTorch model, on shapes not traced.

Each check encodes a padded batch of another size and length than the trace's, builds the
initial state, advances the decoder a few steps with random previous words (so the state
compared is not the initial one), and compares every output of the three graphs with the
model's own ``encode`` / ``init_state`` / ``step``: the largest absolute difference per
graph. A graph that froze an axis fails here (onnxruntime refuses the shape or the values
differ), which is what keeps a traced export honest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Sequence

import numpy as np
import torch

from rnmt.export.examples import Shapes, previous_tokens, source_batch
from rnmt.export.graphs import ReadoutGraph, Signature, StepGraph
from rnmt.export.writing import GRAPH_FILES, READOUT_FILE, decoder_rows
from rnmt.models.base import TranslationModel
from rnmt.search.shortlist import readout_view

# (B, S, K) of the checks: one source row, a long batch, a wide beam; none is the trace's
CHECK_SHAPES = (Shapes(1, 1, 1), Shapes(2, 17, 3), Shapes(5, 6, 4))
CHECK_STEPS = 3  # decoder steps before the compared one


def sessions(directory: Path) -> Dict[str, Any]:
    """A session per graph the directory holds (the readout step only where written)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 4  # errors come back as exceptions; the log would repeat them unasked
    files = {**GRAPH_FILES, **({"readout": READOUT_FILE} if (directory / READOUT_FILE).exists() else {})}
    return {name: ort.InferenceSession(str(directory / file), options, providers=["CPUExecutionProvider"])
            for name, file in files.items()}


def _diff(got: np.ndarray, want: torch.Tensor) -> float:
    want_np = want.detach().numpy()
    if got.shape != want_np.shape:
        return float("inf")
    if want_np.dtype == np.bool_ or not np.issubdtype(want_np.dtype, np.floating):
        return 0.0 if np.array_equal(got, want_np) else float("inf")
    finite = np.isfinite(want_np)  # -inf log-probabilities (a masked word) must match exactly
    if not np.array_equal(finite, np.isfinite(got)) or not np.array_equal(got[~finite], want_np[~finite]):
        return float("inf")
    return float(np.abs(got[finite] - want_np[finite]).max(initial=0.0))


def max_differences(model: TranslationModel, sig: Signature, directory: Path, src_vocab: int, tgt_vocab: int,
                    shapes: Sequence[Shapes] = CHECK_SHAPES) -> Dict[str, float]:
    """The largest absolute difference between onnxruntime and PyTorch per graph over
    ``shapes`` (inf where a shape or an integer output differs)."""
    run = sessions(directory)
    worst = {name: 0.0 for name in run}
    view = readout_view(model, tgt_vocab) if "readout" in run else None
    for k, shape in enumerate(shapes):
        src, src_mask = source_batch(shape, src_vocab, seed=100 + k)
        with torch.no_grad():
            memory = model.encode(src, src_mask)
            got = run["encoder"].run(None, {"src": src.numpy(), "src_mask": src_mask.numpy()})
            worst["encoder"] = max([worst["encoder"]] + [_diff(g, w) for g, w in zip(got, memory.values())])
            feed = {f"memory.{n}": t.numpy() for n, t in memory.items()}
            got = run["init"].run(None, feed)
            first = model.init_state(memory)
            worst["init"] = max([worst["init"]] + [_diff(g, w) for g, w in zip(got, first.values())])
            state, step_memory = decoder_rows(model, memory, shape.beam, sig.beam_shares_memory)
            rows = shape.batch * shape.beam
            for j in range(CHECK_STEPS + 1):
                prev = previous_tokens(rows, tgt_vocab, seed=j + 10 * k)
                want = StepGraph(model, sig)(prev, *state.values(), *step_memory.values())
                feed = {"prev_tokens": prev.numpy(), **{f"state.{n}": t.numpy() for n, t in state.items()},
                        **{f"memory.{n}": t.numpy() for n, t in step_memory.items()}}
                got = run["step"].run(None, feed)
                worst["step"] = max([worst["step"]] + [_diff(g, w) for g, w in zip(got, want)])
                if view is not None:
                    got = run["readout"].run(None, feed)
                    readout = ReadoutGraph(view, sig)(prev, *state.values(), *step_memory.values())
                    worst["readout"] = max([worst["readout"]] + [_diff(g, w) for g, w in zip(got, readout)])
                state = dict(zip(sig.state, want[1:1 + len(sig.state)]))
    return worst
