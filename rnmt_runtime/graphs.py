"""The exported graphs as a model the searches drive: ``encode``, ``init_state`` and ``step``
on dicts of numpy arrays, as rnmt's `TranslationModel` does on dicts of tensors.

Each graph runs in an onnxruntime session on the CPU. No custom-operator library is ever
registered, so a graph can only use onnxruntime's own operators: loading an export runs no
code from it. A graph is fed only the inputs it declares (the exporter drops the memory
tensors a graph does not read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import onnxruntime as ort

from rnmt_runtime.errors import ExportError, one_line
from rnmt_runtime.manifest import Manifest

Arrays = Dict[str, np.ndarray]


def session_options(threads: Optional[int]) -> ort.SessionOptions:
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: a warning about unused initialisers is not the user's business
    options.add_session_config_entry("session.load_model_format", "ONNX")  # never the ORT format
    return options


def open_session(path: Path, threads: Optional[int]) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(str(path), sess_options=session_options(threads),
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own types for a damaged or foreign file
        first = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        raise ExportError(f"{path}: onnxruntime cannot load this graph: {first[:300]}") from None


class Graph:
    """One session and the names of its inputs and outputs."""

    def __init__(self, path: Path, threads: Optional[int]) -> None:
        self.path = path
        self.session = open_session(path, threads)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]

    def need_outputs(self, names: List[str]) -> None:
        missing = [n for n in names if n not in self.outputs]
        if missing:
            raise ExportError(f"{self.path}: the graph has no output {missing[0]!r} (the manifest expects it)")

    def run(self, feeds: Arrays) -> Arrays:
        feed = {name: feeds[name] for name in self.inputs}
        return dict(zip(self.outputs, self.session.run(self.outputs, feed)))


class ExportedModel:
    """The model of an export directory, for `rnmt_runtime.search`."""

    def __init__(self, manifest: Manifest, threads: Optional[int] = None) -> None:
        self.manifest = manifest
        ids = manifest.special_ids
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = ids["pad"], ids["unk"], ids["bos"], ids["eos"]
        self.beam_shares_memory = manifest.beam_shares_memory
        self.memory_names, self.state_names = manifest.memory, manifest.state
        self.encoder = Graph(manifest.graphs["encoder"], threads)
        self.init = Graph(manifest.graphs["init"], threads)
        self.stepper = Graph(manifest.graphs["step"], threads)
        self.encoder.need_outputs([f"memory.{n}" for n in self.memory_names])
        self.init.need_outputs([f"state.{n}" for n in self.state_names])
        self.stepper.need_outputs(["log_probs"] + [f"next_state.{n}" for n in self.state_names])
        for graph in (self.encoder, self.init, self.stepper):
            known = {"src", "src_mask", "prev_tokens"} | {f"memory.{n}" for n in self.memory_names} \
                | {f"state.{n}" for n in self.state_names}
            unknown = [n for n in graph.inputs if n not in known]
            if unknown:
                raise ExportError(f"{graph.path}: input {unknown[0]!r} is none the manifest names")
        self.reports_attention = "attention" in self.stepper.outputs
        self.threads = threads
        self._readout: Optional[Graph] = None  # opened by the first shortlisted step (`readout_step`)
        self._output_layer: Optional[Tuple[np.ndarray, np.ndarray]] = None

    def output_layer(self) -> Tuple[np.ndarray, np.ndarray]:
        """The output layer's weight [V, d] and bias [V] (fp32), for a lexical shortlist; an
        `ExportError` for an export written without them."""
        if self._output_layer is None:
            files = self.manifest.output_layer
            if files is None or self.manifest.readout is None:
                raise ExportError(f"{self.manifest.path}: this export has no readout step and output layer, which a "
                                  f"shortlist needs: write them with rnmt export --shortlists")
            arrays = []
            for key in ("weight", "bias"):
                try:
                    arrays.append(np.load(files[key], allow_pickle=False))  # plain arrays only: nothing runs
                except (OSError, ValueError) as exc:
                    raise ExportError(f"{files[key]}: cannot read the output layer ({exc})") from None
            weight, bias = arrays
            if weight.ndim != 2 or bias.shape != (weight.shape[0],) or weight.dtype != np.float32 \
                    or bias.dtype != np.float32:
                raise ExportError(f"{files['weight']}: the output layer must be fp32 [V, d] with a bias [V], got "
                                  f"{weight.dtype} {weight.shape} and {bias.dtype} {bias.shape}")
            self._output_layer = (weight, bias)
        return self._output_layer

    def open_readout(self) -> Graph:
        """The readout graph's session, opened once (before searches run side by side)."""
        if self._readout is None:
            self.output_layer()  # an export without a readout step says so here
            assert self.manifest.readout is not None
            readout = Graph(self.manifest.readout, self.threads)
            readout.need_outputs(["readout"] + [f"next_state.{n}" for n in self.state_names])
            self._readout = readout
        return self._readout

    def readout_step(self, prev: np.ndarray, state: Arrays, memory: Arrays) -> Tuple[np.ndarray, Arrays, Arrays]:
        """`step` without the output layer: (the readout [N, d], the next state, extras)."""
        readout = self.open_readout()
        feeds = {"prev_tokens": prev.astype(np.int64, copy=False)}
        feeds.update({f"state.{n}": state[n] for n in self.state_names})
        feeds.update({f"memory.{n}": memory[n] for n in self.memory_names})
        out = readout.run(feeds)
        extras = {"attention": out["attention"]} if "attention" in out else {}
        return out["readout"], {n: out[f"next_state.{n}"] for n in self.state_names}, extras

    def encode(self, src: np.ndarray, src_mask: np.ndarray) -> Arrays:
        out = self.encoder.run({"src": src.astype(np.int64, copy=False), "src_mask": src_mask.astype(bool, copy=False)})
        return {n: out[f"memory.{n}"] for n in self.memory_names}

    def init_state(self, memory: Arrays) -> Arrays:
        out = self.init.run({f"memory.{n}": memory[n] for n in self.memory_names})
        return {n: out[f"state.{n}"] for n in self.state_names}

    def step(self, prev: np.ndarray, state: Arrays, memory: Arrays) -> Tuple[np.ndarray, Arrays, Arrays]:
        feeds = {"prev_tokens": prev.astype(np.int64, copy=False)}
        feeds.update({f"state.{n}": state[n] for n in self.state_names})
        feeds.update({f"memory.{n}": memory[n] for n in self.memory_names})
        out = self.stepper.run(feeds)
        extras = {"attention": out["attention"]} if "attention" in out else {}
        log_probs = out["log_probs"]
        if not log_probs.flags.writeable:  # the searches mask entries in place
            log_probs = log_probs.copy()
        return log_probs, {n: out[f"next_state.{n}"] for n in self.state_names}, extras
