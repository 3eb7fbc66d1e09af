"""Time loops that survive tracing: a recurrent encoder as an ONNX ``Loop`` over the source.

`torch.jit.trace` unrolls a Python ``for`` loop: an encoder traced on a 11-subword source
would only ever read 11 subwords. rnmt's units run over a sequence in
`rnmt.cells.runner` (``run_cell`` and `Bidirectional`); while a graph is traced,
`scripted_runner` replaces both with a loop written in TorchScript (`DirectionLoop`) whose
body is the unit's step, traced on its own. TorchScript keeps the loop, and the exporter
writes it as one ``Loop`` node whose trip count is the source length, so the length stays
a dynamic axis. The replacement computes what the runner computes (padded steps keep the
previous state, outputs are zero there; the reversed direction walks t = S-1 .. 0), with the
masking done at every step where the runner skips it on full steps (the same values).

A unit's step that returns gates, and the ``lockstep`` of both directions in one product,
are speed paths the graph does not need: both directions run their own loop.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Tuple

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.cells import runner

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


class DirectionLoop(nn.Module):
    """The scripted walk over time steps (scripted by `direction_loop`): ``px`` [T, B, P]
    and ``mask`` [T, B, 1] in walking order, ``state`` [B, state_size] -> (outputs [T, B, H],
    the last state)."""

    def __init__(self, step: nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, px: Tensor, mask: Tensor, state: Tensor) -> Tuple[Tensor, Tensor]:
        outputs: List[Tensor] = []
        for t in range(px.size(0)):
            state, out = self.step(px[t], state, mask[t])
            outputs.append(out)
        return torch.stack(outputs), state


def direction_loop(cell: cells.Cell) -> torch.jit.ScriptModule:
    """`DirectionLoop` over ``cell``'s step, traced on example rows of its sizes (the batch
    stays dynamic: the step reads its sizes from its inputs) and scripted."""
    example = next(cell.parameters())
    px = torch.zeros(3, cell.proj_size, dtype=example.dtype)
    state = torch.zeros(3, cell.state_size, dtype=example.dtype)
    real = torch.ones(3, 1, dtype=torch.bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript's deprecation notices: the exporter still reads it
        step = torch.jit.trace(_MaskedStep(cell), (px, state, real), check_trace=False)
        return torch.jit.script(DirectionLoop(step))


def _key(name: str) -> str:
    return name.replace(".", "__")


def build_loops(model: TranslationModel, src: Tensor, src_mask: Tensor) -> nn.ModuleDict:
    """A scripted loop for every unit that ``model.encode`` walks with the runner (found by
    encoding ``src`` once), keyed by the unit's module name."""
    walked: List[int] = []
    plain_run = runner.run_cell

    def recording(cell, *args, **kwargs):
        walked.append(id(cell))
        return plain_run(cell, *args, **kwargs)

    names = {id(m): name for name, m in model.named_modules()}
    runner.run_cell, cells.run_cell = recording, recording
    try:
        with torch.no_grad():
            model.encode(src, src_mask)
    finally:
        runner.run_cell, cells.run_cell = plain_run, plain_run
    return nn.ModuleDict({_key(names[i]): direction_loop(dict(model.named_modules())[names[i]])
                          for i in dict.fromkeys(walked)})


def _by_cell(model: nn.Module, loops: nn.ModuleDict) -> Dict[int, nn.Module]:
    return {id(module): loops[_key(name)] for name, module in model.named_modules() if _key(name) in loops}


@contextlib.contextmanager
def scripted_runner(model: nn.Module, loops: nn.ModuleDict) -> Iterator[None]:
    """While active, `rnmt.cells.run_cell` and `Bidirectional.forward` walk ``model``'s
    units through ``loops`` (`build_loops`; they must be submodules of the module traced)."""
    by_cell = _by_cell(model, loops)
    plain_run, plain_bidir = runner.run_cell, runner.Bidirectional.forward

    def run_cell(cell: cells.Cell, x: Tensor, mask: Optional[Tensor] = None, reverse: bool = False,
                 state0: Optional[Tensor] = None, return_gates: bool = False):
        loop = by_cell.get(id(cell))
        if loop is None or return_gates:
            return plain_run(cell, x, mask, reverse, state0, return_gates)
        px = cell.project_inputs(x).transpose(0, 1)  # [T, B, P]
        steps = (torch.ones_like(x[..., 0], dtype=torch.bool) if mask is None else mask.to(torch.bool))
        steps = steps.transpose(0, 1).unsqueeze(-1)  # [T, B, 1]
        if reverse:
            px, steps = px.flip(0), steps.flip(0)
        state = cell.init_state(x.size(0), px) if state0 is None else state0
        outputs, state = loop(px, steps, state)
        if reverse:
            outputs = outputs.flip(0)
        return outputs.transpose(0, 1), state, None

    def bidirectional(self, x: Tensor, mask: Optional[Tensor] = None, return_gates: bool = False):
        if return_gates:
            return plain_bidir(self, x, mask, return_gates)
        out_f, last_f, _ = run_cell(self.fwd, x, mask)
        out_b, last_b, _ = run_cell(self.bwd, x, mask, reverse=True)
        return runner.BidirectionalOutput(torch.cat([out_f, out_b], dim=-1), last_f, last_b, None)

    runner.run_cell, cells.run_cell = run_cell, run_cell
    runner.Bidirectional.forward = bidirectional  # type: ignore[method-assign]
    try:
        yield
    finally:
        runner.run_cell, cells.run_cell = plain_run, plain_run
        runner.Bidirectional.forward = plain_bidir  # type: ignore[method-assign]
