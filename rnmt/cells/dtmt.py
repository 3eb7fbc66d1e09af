"""The DTMT units (Meng & Zhang 2019): L-GRU, T-GRU and the deep-transition block.

L-GRU, linear transformation enhanced GRU (DTMT eq. 14-16, gates r, z as eq. 8-9):

    r_t  = sigma(LN(W_xr x_t + W_hr h_{t-1}))                        (8)
    z_t  = sigma(LN(W_xz x_t + W_hz h_{t-1}))                        (9)
    l_t  = sigma(LN(W_xl x_t + W_hl h_{t-1}))                        (16)
    h~_t = tanh(W_xh x_t + r_t * (W_hh h_{t-1} + b_h)) + l_t * W_x x_t (15)
    h_t  = (1 - z_t) * h_{t-1} + z_t * h~_t                          (14)

T-GRU, transition GRU, which reads only the state (DTMT eq. 10-13):

    r_t  = sigma(LN(W_hr h_{t-1}))                                   (12)
    z_t  = sigma(LN(W_hz h_{t-1}))                                   (13)
    h~_t = tanh(r_t * (W_hh h_{t-1} + b_h))                          (11)
    h_t  = (1 - z_t) * h_{t-1} + z_t * h~_t                          (10)

The LNs (one per gate, over the joint pre-activation, "Layer Normalization" section) and
b_h come from the authors' code; with ``layer_norm=False`` the gates get biases instead.
Parameters: L-GRU 3(dx+d)d + 2 dx d + d^2 + d + 3(2d) with LN; T-GRU 3d^2 + d + 2(2d).
``dropout`` drops every candidate h~ with a fresh mask per step (DTMT code: rnn_dropout).
"""

from __future__ import annotations

from typing import Dict

import torch
from torch import Tensor, nn

from rnmt.cells.base import Cell, GateNorm, interpolate
from rnmt.cells.lau import _ThreeGateLinearCell
from rnmt.cells.registry import build, register, registered_names
from rnmt.config import DEPTH
from rnmt.errors import UserError


@register("lgru")
class LGRU(_ThreeGateLinearCell):
    """L-GRU, DTMT eq. 14-16: a GRU whose candidate adds a gated linear input term."""

    gate_names = ("r", "z", "l")
    input_names = ("W_xr", "W_xz", "W_xl", "W_xh", "W_x")
    recurrent_names = ("W_hr", "W_hz", "W_hl", "W_hh")
    bias_names = ("b_r", "b_z", "b_l", "b_h")

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        r, z, l, nonlinear, linear = self._parts(px, state)
        candidate = self.drop_candidate(torch.addcmul(nonlinear, l, linear))  # eq. 15
        new = interpolate(state, candidate, z)  # eq. 14
        if return_gates:
            return new, {"r": r, "z": z, "l": l}
        return new


@register("tgru")
class TGRU(Cell):
    """T-GRU, DTMT eq. 10-13. It reads no input: ``input_size`` is accepted and ignored,
    ``project_inputs`` returns an empty projection and ``step`` ignores ``px``."""

    gate_names = ("r", "z")
    recurrent_names = ("W_hr", "W_hz", "W_hh")
    bias_names = ("b_r", "b_z", "b_h")

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0,
                 carry_bias: float = 0.0) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        d = hidden_size
        self.proj_size = 0
        self.weight_h = nn.Parameter(torch.empty(d, 3 * d))  # [W_hr W_hz W_hh]
        self.bias = nn.Parameter(torch.empty(d if layer_norm else 3 * d))
        if carry_bias and not layer_norm:
            raise UserError("cell 'tgru': option 'carry_bias' offsets the layer-normalised update gate; it needs "
                            "layer_norm")
        # carry_bias > 0 starts z (eq. 13) below 0.5, so that h_t keeps more of h_{t-1}: not in
        # the paper (its LN offsets start at 0); DTMTOptions.carry_bias says why it exists.
        self.carry_bias = carry_bias
        self.gate_norm = GateNorm(2, d, initial_offsets=(0.0, 0.0 - carry_bias)) if layer_norm else None
        self.reset_parameters()

    def project_inputs(self, x: Tensor) -> Tensor:
        return x.new_zeros(*x.shape[:-1], 0)

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        d = self.hidden_size
        if self.gate_norm is None:
            rec_gates, rec_h = self.recurrent_product(state, self.bias).split((2 * d, d), dim=1)
            gates = torch.sigmoid(rec_gates)
        else:
            rec_gates, rec_h = self.recurrent_product(state).split((2 * d, d), dim=1)
            gates = torch.sigmoid(self.gate_norm(rec_gates))
            rec_h = rec_h + self.bias
        r, z = gates.chunk(2, dim=1)
        candidate = self.drop_candidate(torch.tanh(r * rec_h))  # eq. 11
        new = interpolate(state, candidate, z)  # eq. 10
        if return_gates:
            return new, {"r": r, "z": z}
        return new


# T-GRUs read no input, a nested block is never meant, and an LSTM's [h; c] state cannot be
# handed to a T-GRU and back.
_NOT_BOTTOM = ("tgru", "transition", "lstm")


@register("transition")
class DeepTransition(Cell):
    """A deep-transition block (DTMT "Deep Transition RNN", "Encoder", "Decoder"): at every
    time step a bottom unit reads x_t and the carried state, then ``depth`` T-GRUs refine
    that state in sequence; the last T-GRU's state is carried to the next step.

    DTMT#k uses k T-GRUs per block; the default depth 4 is the authors' released setting.
    ``layer_norm`` and ``dropout`` are passed to the bottom unit and every T-GRU. Gates are
    reported as ``bottom.<gate>`` and ``t<k>.<gate>`` (k = 1 .. depth).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        layer_norm: bool = False,
        dropout: float = 0.0,
        bottom: str = "lgru",
        depth: int = 4,
        carry_bias: float = 0.0,
    ) -> None:
        super().__init__(input_size, hidden_size, layer_norm, dropout)
        valid = [n for n in registered_names() if n not in _NOT_BOTTOM]
        if bottom not in valid:
            raise UserError(f"cell 'transition': option 'bottom' must be one of {', '.join(valid)}, got {bottom!r}")
        if not isinstance(depth, int) or isinstance(depth, bool) or not DEPTH.holds(depth):
            raise UserError(f"cell 'transition': option 'depth' must be an integer {DEPTH.describe()} (the bound of "
                            f"the config's depths), got {depth!r}")
        self.bottom = build(bottom, input_size, hidden_size, layer_norm=layer_norm, dropout=dropout)
        self.transitions = nn.ModuleList(
            TGRU(hidden_size, hidden_size, layer_norm=layer_norm, dropout=dropout, carry_bias=carry_bias)
            for _ in range(depth)
        )
        self.bottom_name = bottom
        self.depth = depth
        self.proj_size = self.bottom.proj_size
        self.gate_names = tuple(f"bottom.{g}" for g in self.bottom.gate_names) + tuple(
            f"t{k + 1}.{g}" for k in range(depth) for g in TGRU.gate_names
        )

    def project_inputs(self, x: Tensor) -> Tensor:
        return self.bottom.project_inputs(x)

    def step(self, px: Tensor, state: Tensor, return_gates: bool = False):
        if not return_gates:
            state = self.bottom.step(px, state)
            for tgru in self.transitions:
                state = tgru.step(px, state)
            return state
        state, bottom_gates = self.bottom.step(px, state, True)
        gates = {f"bottom.{k}": v for k, v in bottom_gates.items()}
        for k, tgru in enumerate(self.transitions):
            state, tgru_gates = tgru.step(px, state, True)
            gates.update({f"t{k + 1}.{g}": v for g, v in tgru_gates.items()})
        return state, gates

    def lockstep(self, other: Cell, like: Tensor):
        """Both blocks (a bidirectional encoder's directions) in lockstep, unit by unit, where
        the bottom unit and every T-GRU have a lockstep step."""
        if type(other) is not type(self) or other.depth != self.depth:
            return None
        steps = [self.bottom.lockstep(other.bottom, like)]
        steps += [mine.lockstep(theirs, like) for mine, theirs in zip(self.transitions, other.transitions)]
        if any(step is None for step in steps):
            return None

        def step(px: Tensor, state: Tensor) -> Tensor:
            for unit_step in steps:
                state = unit_step(px, state)
            return state

        return step

    def matrices(self) -> Dict[str, Tensor]:
        mats = {f"bottom.{k}": v for k, v in self.bottom.matrices().items()}
        for k, tgru in enumerate(self.transitions):
            mats.update({f"t{k + 1}.{n}": v for n, v in tgru.matrices().items()})
        return mats

    def reset_parameters(self) -> None:
        self.bottom.reset_parameters()
        for tgru in self.transitions:
            tgru.reset_parameters()

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bottom={self.bottom_name}, depth={self.depth}"
