"""Running a unit over a padded batch: one direction (`run_cell`) or both (`Bidirectional`).

Inputs are batch-first ``[B, T, D]`` with a boolean mask ``[B, T]`` (True = real token).
Padded steps copy the previous state (SPEC section 0), so

* a sentence's states never depend on the padding around it, and
* with left-aligned padding, walking t = T-1 .. 0 starts each sentence from the initial
  state at its own last token: the reversed direction equals running the reversed
  sentence, with outputs kept aligned to the input positions.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

from rnmt.cells.base import Cell, OptionalGates


def run_cell(
    cell: Cell,
    x: Tensor,
    mask: Optional[Tensor] = None,
    reverse: bool = False,
    state0: Optional[Tensor] = None,
    return_gates: bool = False,
) -> Tuple[Tensor, Tensor, OptionalGates]:
    """Run ``cell`` over a batch of sequences.

    Args:
        cell: any unit.
        x: inputs [B, T, input_size].
        mask: [B, T] bool, True on real tokens; None means no padding.
        reverse: walk t = T-1 .. 0 instead of 0 .. T-1.
        state0: initial state [B, state_size]; zeros when None.
        return_gates: also collect the unit's gates.

    Returns:
        outputs [B, T, hidden_size] (zero at padded positions), the state after each
        sentence's last real token in walking order [B, state_size], and a dict of gate
        tensors [B, T, hidden_size] (zero at padded positions) or None.
    """
    if x.dim() != 3:
        raise ValueError(f"run_cell expects batch-first input [B, T, D], got shape {tuple(x.shape)}")
    batch, length, _ = x.shape
    projected = cell.project_inputs(x)
    state = cell.init_state(batch, projected) if state0 is None else state0
    # One [B, P] tensor per step. unbind's backward stacks the step gradients once, where
    # indexing px[:, t] would allocate and fill a full-size zero gradient at every step.
    px = projected.transpose(0, 1).contiguous().unbind(0)
    full_steps, step_mask = _step_masks(mask, batch, length, reads_host=cell.may_read_host())

    state, outputs, gate_steps = _walk(cell, px, state, full_steps, step_mask, reverse, return_gates)
    if length == 0:
        out = x.new_zeros(batch, 0, cell.hidden_size)
    else:
        out = torch.stack(outputs, dim=1)
    gates_out = None
    if return_gates:
        names = gate_steps[0].keys() if length else cell.gate_names
        gates_out = {
            k: torch.stack([g[k] for g in gate_steps], dim=1) if length else x.new_zeros(batch, 0, cell.hidden_size)
            for k in names
        }
    return out, state, gates_out


def _step_masks(mask: Optional[Tensor], batch: int, length: int, lockstep: bool = False,
                reads_host: bool = True) -> Tuple[List[bool], Optional[Tensor]]:
    """Per walk step, whether no row is padding there, and the time-major mask [T, B, 1]
    ([T, 2, B, 1] in lockstep: position t for the forward unit, T-1-t for the backward one);
    all steps full and no mask when ``mask`` is None. Without ``reads_host`` (`Cell.may_read_host`)
    every step is masked: the same values, nothing read on the host."""
    if mask is None:
        return [True] * length, None
    if mask.shape != (batch, length):
        raise ValueError(f"mask shape {tuple(mask.shape)} does not match input {(batch, length)}")
    steps = mask.to(torch.bool).transpose(0, 1)  # [T, B]
    if lockstep:
        steps = torch.stack([steps, steps.flip(0)], 1)  # [T, 2, B]
    if not reads_host:
        return [False] * length, steps.unsqueeze(-1)
    return steps.flatten(1).all(1).tolist(), steps.unsqueeze(-1)  # one host sync for the whole sequence


def _walk(
    cell: Cell,
    px: Sequence[Tensor],
    state: Tensor,
    full_steps: List[bool],
    step_mask: Optional[Tensor],
    reverse: bool,
    return_gates: bool,
) -> Tuple[Tensor, List[Tensor], List[Dict[str, Tensor]]]:
    """The time loop: step, then copy the previous state where the step is padding."""
    length = len(px)
    outputs: List[Optional[Tensor]] = [None] * length
    gate_steps: List[Optional[Dict[str, Tensor]]] = [None] * length
    for t in range(length - 1, -1, -1) if reverse else range(length):
        if return_gates:
            new, gates = cell.step(px[t], state, True)
        else:
            new = cell.step(px[t], state)
        if full_steps[t]:  # no padding at this step: skip the masking ops
            state = new
            outputs[t] = cell.output(state)
        else:
            real = step_mask[t]
            state = torch.where(real, new, state)
            outputs[t] = cell.output(state) * real
            if return_gates:
                gates = {k: v * real for k, v in gates.items()}
        if return_gates:
            gate_steps[t] = gates
    return state, outputs, gate_steps


class BidirectionalOutput(NamedTuple):
    """What `Bidirectional` returns: a tuple, so ``out, last_f, last_b, gates = ...`` works,
    with names for the callers that want one field."""

    outputs: Tensor  # [B, T, H_fwd + H_bwd]
    last_fwd: Tensor  # the forward unit's last state
    last_bwd: Tensor  # the backward unit's last state (its state at position 0)
    gates: OptionalGates  # keyed fwd.<name> / bwd.<name>, or None


class Bidirectional(nn.Module):
    """Two units over the same input, one in each direction; outputs concatenated [fwd; bwd]."""

    def __init__(self, fwd_cell: Cell, bwd_cell: Cell) -> None:
        super().__init__()
        if fwd_cell.input_size != bwd_cell.input_size:
            raise ValueError("both directions must read the same input size")
        self.fwd = fwd_cell
        self.bwd = bwd_cell
        self.input_size = fwd_cell.input_size
        self.hidden_size = fwd_cell.hidden_size + bwd_cell.hidden_size

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None, return_gates: bool = False
    ) -> BidirectionalOutput:
        """Both directions over ``x`` (`BidirectionalOutput`; gates only with ``return_gates``)."""
        if not return_gates and x.dim() == 3 and x.size(0) > 0 and x.size(1) > 0:
            step = self.fwd.lockstep(self.bwd, x)
            if step is not None:
                return BidirectionalOutput(*_run_lockstep(self.fwd, self.bwd, step, x, mask), None)
        out_f, last_f, gates_f = run_cell(self.fwd, x, mask, reverse=False, return_gates=return_gates)
        out_b, last_b, gates_b = run_cell(self.bwd, x, mask, reverse=True, return_gates=return_gates)
        gates = None
        if return_gates:
            gates = {f"fwd.{k}": v for k, v in gates_f.items()}
            gates.update({f"bwd.{k}": v for k, v in gates_b.items()})
        return BidirectionalOutput(torch.cat([out_f, out_b], dim=-1), last_f, last_b, gates)


def _run_lockstep(fwd: Cell, bwd: Cell, step, x: Tensor, mask: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    """Both directions in one time loop: at walk step t the forward unit reads position t and
    the backward unit position T-1-t, as one [2, B, .] stacked step (``Cell.lockstep``).
    Same states, outputs and padding rules as `run_cell` in each direction."""
    batch, length, _ = x.shape
    proj_f = fwd.project_inputs(x).transpose(0, 1)  # [T, B, P]
    proj_b = bwd.project_inputs(x).transpose(0, 1).flip(0)  # in the backward unit's walking order
    px = torch.stack([proj_f, proj_b], 1).unbind(0)  # T x [2, B, P], one copy
    state = x.new_zeros(2, batch, fwd.state_size)
    full_steps, pair_mask = _step_masks(mask, batch, length, lockstep=True, reads_host=fwd.may_read_host())
    outputs: List[Tensor] = []
    for t in range(length):
        new = step(px[t], state)
        if full_steps[t]:
            state = new
            outputs.append(fwd.output(state))
        else:
            real = pair_mask[t]
            state = torch.where(real, new, state)
            outputs.append(fwd.output(state) * real)
    out = torch.stack(outputs)  # [T, 2, B, H]
    both = torch.cat([out[:, 0], out[:, 1].flip(0)], -1)  # [T, B, 2H], positions aligned
    return both.transpose(0, 1), state[0], state[1]
