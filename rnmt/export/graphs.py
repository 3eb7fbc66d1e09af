"""A model's encode / init_state / step as modules with flat tensor inputs and outputs.

`rnmt.models.base.TranslationModel` passes dicts of tensors; an ONNX graph has named
inputs and outputs. Each wrapper here takes and returns tensors in the order of the names
it is given, which become the graph's names (docs/export-format.md):

* `EncoderGraph`: ``src``, ``src_mask`` -> ``memory.<name>``...
* `InitGraph`: ``memory.<name>``... -> ``state.<name>``...
* `StepGraph`: ``prev_tokens``, ``state.<name>``..., ``memory.<name>``... -> ``log_probs``,
  ``next_state.<name>``..., and ``attention`` when the model reports one.
* `ReadoutGraph`: the step's inputs -> ``readout`` (what the output layer multiplies, [N, d]),
  ``next_state.<name>``..., ``attention``: the step without its output layer, for a runtime
  that multiplies by a lexical shortlist's rows itself (onnxruntime runs every node of a graph
  whatever outputs are asked of it, so the step graph cannot serve).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import torch
from torch import Tensor, nn

from rnmt.export.loops import build_loops, scripted_walks
from rnmt.models.base import TranslationModel

TensorDict = Dict[str, Tensor]


@dataclass(frozen=True)
class Signature:
    """What the three graphs exchange: the memory's and the state's tensor names in order,
    whether the step reports attention, and whether it takes K state rows per memory row."""

    memory: Tuple[str, ...]
    state: Tuple[str, ...]
    attention: bool
    beam_shares_memory: bool

    def encoder_io(self) -> Tuple[List[str], List[str]]:
        return ["src", "src_mask"], [f"memory.{n}" for n in self.memory]

    def init_io(self) -> Tuple[List[str], List[str]]:
        return [f"memory.{n}" for n in self.memory], [f"state.{n}" for n in self.state]

    def step_io(self, first: str = "log_probs") -> Tuple[List[str], List[str]]:
        inputs = ["prev_tokens", *(f"state.{n}" for n in self.state), *(f"memory.{n}" for n in self.memory)]
        outputs = [first, *(f"next_state.{n}" for n in self.state)]
        return inputs, outputs + (["attention"] if self.attention else [])

    def readout_io(self) -> Tuple[List[str], List[str]]:
        return self.step_io("readout")


def signature(model: TranslationModel, src: Tensor, src_mask: Tensor) -> Signature:
    """The names ``model`` uses, read off one eager encode / init_state / step."""
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        state = model.init_state(memory)
        prev = torch.full((src.size(0),), model.bos_id, dtype=torch.long)
        _, next_state, extras = model.step(prev, state, memory)
    if list(next_state) != list(state):
        raise ValueError(f"the step returns state {list(next_state)}, init_state gives {list(state)}")
    return Signature(tuple(memory), tuple(state), "attention" in extras, bool(model.beam_shares_memory))


class _Graph(nn.Module):
    """A wrapper with the scripted loops its walks over the source need (`rnmt.export.loops`;
    none for a graph without such a walk): trace it inside ``tracing()``."""

    def __init__(self, model: TranslationModel, sig: Signature) -> None:
        super().__init__()
        self.model = model
        self.sig = sig
        self.loops = nn.ModuleDict()

    def with_loops(self, *example: Tensor) -> _Graph:
        """Find and script the walks ``forward(*example)`` makes."""
        self.loops = build_loops(self.model, lambda: self(*example))
        return self

    def tracing(self):
        return scripted_walks(self.model, self.loops)


class EncoderGraph(_Graph):
    def forward(self, src: Tensor, src_mask: Tensor) -> Tuple[Tensor, ...]:
        memory = self.model.encode(src, src_mask)
        return tuple(memory[n] for n in self.sig.memory)


class InitGraph(_Graph):
    def forward(self, *memory: Tensor) -> Tuple[Tensor, ...]:
        state = self.model.init_state(dict(zip(self.sig.memory, memory)))
        return tuple(state[n] for n in self.sig.state)


class StepGraph(_Graph):
    def forward(self, prev_tokens: Tensor, *tensors: Tensor) -> Tuple[Tensor, ...]:
        n = len(self.sig.state)
        state = dict(zip(self.sig.state, tensors[:n]))
        memory = dict(zip(self.sig.memory, tensors[n:]))
        log_probs, next_state, extras = self.model.step(prev_tokens, state, memory)
        outputs = (log_probs, *(next_state[k] for k in self.sig.state))
        return outputs + ((extras["attention"],) if self.sig.attention else ())


class ReadoutGraph(_Graph):
    """The step up to its output layer; ``model`` is a `rnmt.search.shortlist.readout_view`."""

    def forward(self, prev_tokens: Tensor, *tensors: Tensor) -> Tuple[Tensor, ...]:
        n = len(self.sig.state)
        state = dict(zip(self.sig.state, tensors[:n]))
        memory = dict(zip(self.sig.memory, tensors[n:]))
        readout, next_state, extras, _ = self.model.step_logits(prev_tokens, state, memory)
        outputs = (readout, *(next_state[k] for k in self.sig.state))
        return outputs + ((extras["attention"],) if self.sig.attention else ())
