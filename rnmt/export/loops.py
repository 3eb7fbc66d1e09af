"""Time loops that survive tracing: every walk over the source as an ONNX ``Loop``.

`torch.jit.trace` unrolls a Python ``for`` loop: an encoder traced on an 11-subword source
would only ever read 11 subwords. While a graph is traced, `scripted_walks` replaces rnmt's
walks over the source with a loop written in TorchScript (`SourceLoop`), whose body is one
step traced on its own. TorchScript keeps the loop, and the exporter writes it as one
``Loop`` node whose trip count is the source length, so the length stays a dynamic axis.
The walks replaced, each computing what the original computes:

* `rnmt.cells.run_cell` and `Bidirectional.forward` (every recurrent encoder): padded
  steps keep the previous state, outputs are zero there, the reversed direction walks
  t = S-1 .. 0; the masking is done at every step where the runner skips it on full steps,
  and each direction runs its own loop where the fast variants step both in one product.
* `rnmt.models.cseq2seq.cyclic_context` (the Cseq2seq decoders' re-reading of the source at
  every target step): the same masked walk, pooled (the mean of the outputs, or the last).
* `ContextAwareEncoder.forward` (ATR's CA encoder): its backward walk, two units per step.

A step's gates (analysis only) are not part of any graph.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING, Callable, Iterator, List, Optional, Tuple

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.cells import runner
from rnmt.models import atr_rnnsearch, cseq2seq

if TYPE_CHECKING:
    from rnmt.models.base import TranslationModel


class _MaskedStep(nn.Module):
    """One padded step of a unit: the new state where ``real``, the old one elsewhere, and
    the output (zero at padding), as `rnmt.cells.runner._walk` computes them."""

    def __init__(self, cell: cells.Cell) -> None:
        super().__init__()
        self.cell = cell

    def forward(self, px: Tensor, state: Tensor, real: Tensor) -> Tuple[Tensor, Tensor]:
        new = self.cell.step(px, state)
        state = torch.where(real, new, state)
        return state, self.cell.output(state) * real.to(state.dtype)


class _ContextAwareStep(nn.Module):
    """One step of the CA encoder's backward walk (`atr_rnnsearch.ContextAwareEncoder`):
    ``px`` holds the word unit's and the context unit's projected inputs side by side."""

    def __init__(self, encoder: atr_rnnsearch.ContextAwareEncoder) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, px: Tensor, state: Tensor, real: Tensor) -> Tuple[Tensor, Tensor]:
        word, context = self.encoder.backward_word, self.encoder.backward_context
        px_word, px_ctx = px.split((word.proj_size, context.proj_size), dim=1)
        u = word.step(px_word, state)
        state = torch.where(real, context.step(px_ctx, u), state)
        return state, context.output(state) * real.to(state.dtype)


class SourceLoop(nn.Module):
    """The scripted walk (scripted by `source_loop`): ``px`` [T, B, P] and ``mask``
    [T, B, 1] in walking order, ``state`` [B, state_size] -> (outputs [T, B, H], the last
    state), one traced ``step(px_t, state, real)`` per position."""

    def __init__(self, step: nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, px: Tensor, mask: Tensor, state: Tensor) -> Tuple[Tensor, Tensor]:
        outputs: List[Tensor] = []
        for t in range(px.size(0)):
            state, out = self.step(px[t], state, mask[t])
            outputs.append(out)
        return torch.stack(outputs), state


def source_loop(step: nn.Module, proj_size: int, state_size: int, like: Tensor) -> torch.jit.ScriptModule:
    """`SourceLoop` around ``step``, traced on example rows of its sizes (the batch stays
    dynamic: the step reads its sizes from its inputs) and scripted."""
    px = torch.zeros(3, proj_size, dtype=like.dtype)
    state = torch.zeros(3, state_size, dtype=like.dtype)
    real = torch.ones(3, 1, dtype=torch.bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript's deprecation notices: the exporter still reads it
        traced = torch.jit.trace(step, (px, state, real), check_trace=False)
        return torch.jit.script(SourceLoop(traced))


def _loop_for(module: nn.Module) -> torch.jit.ScriptModule:
    like = next(module.parameters())
    if isinstance(module, atr_rnnsearch.ContextAwareEncoder):
        proj = module.backward_word.proj_size + module.backward_context.proj_size
        return source_loop(_ContextAwareStep(module), proj, module.backward_context.state_size, like)
    assert isinstance(module, cells.Cell)
    return source_loop(_MaskedStep(module), module.proj_size, module.state_size, like)


def _key(name: str) -> str:
    return name.replace(".", "__") or "model"


def build_loops(model: TranslationModel, run: Callable[[], object]) -> nn.ModuleDict:
    """A scripted loop for every unit (or CA encoder) that ``run()`` walks over the source,
    keyed by its module name; ``run`` is called once, eagerly, to find them."""
    walked: List[int] = []

    def record(module: nn.Module) -> None:
        walked.append(id(module))

    with _patched(record):
        with torch.no_grad():
            run()
    names = {id(m): name for name, m in model.named_modules()}
    modules = dict(model.named_modules())
    return nn.ModuleDict({_key(names[i]): _loop_for(modules[names[i]]) for i in dict.fromkeys(walked)})


@contextlib.contextmanager
def scripted_walks(model: TranslationModel, loops: nn.ModuleDict) -> Iterator[None]:
    """While active, ``model``'s walks over the source run through ``loops`` (`build_loops`;
    they must be submodules of the module traced)."""
    by_module = {id(m): loops[_key(name)] for name, m in model.named_modules() if _key(name) in loops}
    with _patched(lambda module: by_module.get(id(module))):
        yield


def _walk(loop: nn.Module, px: Tensor, mask: Optional[Tensor], state: Tensor, reverse: bool) -> Tuple[Tensor, Tensor]:
    """``loop`` over batch-first ``px`` [B, T, P] -> (outputs [B, T, H], last state)."""
    steps = torch.ones_like(px[..., 0], dtype=torch.bool) if mask is None else mask.to(torch.bool)
    px, steps = px.transpose(0, 1), steps.transpose(0, 1).unsqueeze(-1)  # time-major
    if reverse:
        px, steps = px.flip(0), steps.flip(0)
    outputs, state = loop(px, steps, state)
    return (outputs.flip(0) if reverse else outputs).transpose(0, 1), state


@contextlib.contextmanager
def _patched(loop_of: Callable[[nn.Module], Optional[nn.Module]]) -> Iterator[None]:
    """The walks replaced by ``loop_of(module)``'s loop where it gives one (the originals
    run where it gives None; a recorder returns None and only notes the module)."""
    plain_run, plain_bidir = runner.run_cell, runner.Bidirectional.forward
    plain_cyclic, plain_ca = cseq2seq.cyclic_context, atr_rnnsearch.ContextAwareEncoder.forward

    def run_cell(cell, x, mask=None, reverse=False, state0=None, return_gates=False):
        loop = None if return_gates else loop_of(cell)
        if loop is None:
            return plain_run(cell, x, mask, reverse, state0, return_gates)
        px = cell.project_inputs(x)
        state = cell.init_state(x.size(0), px) if state0 is None else state0
        outputs, state = _walk(loop, px, mask, state, reverse)
        return outputs, state, None

    def bidirectional(self, x, mask=None, return_gates=False):
        if return_gates:
            return plain_bidir(self, x, mask, return_gates)
        out_f, last_f, _ = run_cell(self.fwd, x, mask)
        out_b, last_b, _ = run_cell(self.bwd, x, mask, reverse=True)
        return runner.BidirectionalOutput(torch.cat([out_f, out_b], dim=-1), last_f, last_b, None)

    def cyclic_context(cell, px_src, src_mask, state, mode, gate_means=None):
        loop = None if gate_means is not None else loop_of(cell)
        if loop is None:
            return plain_cyclic(cell, px_src, src_mask, state, mode, gate_means)
        outputs, state = _walk(loop, px_src, src_mask, state, reverse=False)
        if mode == "last":
            return cell.output(state)
        return outputs.sum(1) / src_mask.sum(1, keepdim=True).clamp_min(1).to(outputs.dtype)

    def context_aware(self, x, mask):
        loop = loop_of(self)
        if loop is None:
            return plain_ca(self, x, mask)
        forward_states, _, _ = cells.run_cell(self.forward_unit, x, mask)
        px = torch.cat([self.backward_word.project_inputs(x), self.backward_context.project_inputs(forward_states)],
                       -1)
        state = self.backward_context.init_state(x.size(0), px)
        outputs, state = _walk(loop, px, mask, state, reverse=True)
        return outputs, self.backward_context.output(state)

    runner.run_cell, cells.run_cell, cseq2seq.cyclic_context = run_cell, run_cell, cyclic_context
    runner.Bidirectional.forward = bidirectional  # type: ignore[method-assign]
    atr_rnnsearch.ContextAwareEncoder.forward = context_aware  # type: ignore[method-assign]
    try:
        yield
    finally:
        runner.run_cell, cells.run_cell, cseq2seq.cyclic_context = plain_run, plain_run, plain_cyclic
        runner.Bidirectional.forward = plain_bidir  # type: ignore[method-assign]
        atr_rnnsearch.ContextAwareEncoder.forward = plain_ca  # type: ignore[method-assign]
