"""The interface every recurrent unit in rnmt implements.

A unit splits its work in two so that the expensive part runs once per sequence:

* ``project_inputs(x)`` applies every input-side weight matrix to all time steps in one
  matrix product: ``[..., input_size] -> [..., proj_size]``.
* ``step(px_t, state)`` advances one time step from the projected input of that step; all
  recurrent-side matrices of the unit are applied in one fused matrix product.

The carried state is always a single tensor ``[B, state_size]`` so that masking, beam
reordering and batching never need to know which unit is inside. Units whose state is
wider than their output (an LSTM carries ``[h; c]``) expose the visible part through
``output(state)``.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch
from torch import Tensor, nn


class Cell(nn.Module):
    """Base class of all recurrent units.

    Attributes:
        input_size: size of the input vectors x_t.
        hidden_size: size of the output h_t seen by the rest of the model.
        state_size: size of the carried state (``hidden_size`` for all units but LSTM).
        proj_size: size of ``project_inputs``' output per time step.
        gate_names: names of the gates returned by ``step(..., return_gates=True)``.
    """

    input_size: int
    hidden_size: int
    state_size: int
    proj_size: int
    gate_names: Tuple[str, ...] = ()

    def project_inputs(self, x: Tensor) -> Tensor:
        """Input-side projections for all time steps at once: [..., input_size] -> [..., proj_size]."""
        raise NotImplementedError

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        """One time step.

        Args:
            px: projected input of this step, [B, proj_size].
            state: previous state, [B, state_size].
            return_gates: when True, also return a dict of gate activations [B, hidden_size].

        Returns:
            the new state [B, state_size], or (state, gates) when ``return_gates``.
        """
        raise NotImplementedError

    def output(self, state: Tensor) -> Tensor:
        """The visible output h_t of a state (the state itself for all units but LSTM)."""
        return state

    def init_state(self, batch_size: int, like: Tensor) -> Tensor:
        """A zero state on the device and dtype of ``like``."""
        return like.new_zeros(batch_size, self.state_size)

    def forward(self, x: Tensor, state: Tensor) -> Tensor:
        """Convenience: one step from an unprojected input x [B, input_size]."""
        return self.step(self.project_inputs(x), state)


Gates = Dict[str, Tensor]
OptionalGates = Optional[Dict[str, Tensor]]
