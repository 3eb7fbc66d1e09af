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

Shared options of every unit:

* ``layer_norm``: layer normalisation inside each gate's pre-activation (DTMT, "Layer
  Normalization"); the normalisation's learned offset then plays the role of the gate bias,
  so gates lose their bias vectors.
* ``dropout``: dropout on the candidate activation, a fresh mask at every step
  (non-variational), only in training mode.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnmt.errors import UserError

# Layer-normalisation epsilon of the DTMT reference implementation.
LN_EPS = 1e-6


class GateNorm(nn.Module):
    """Layer normalisation applied separately to each of ``num_gates`` gate pre-activations.

    The input ``[B, num_gates * size]`` holds the gates side by side; each block of ``size``
    is normalised on its own and gets its own gain (init 1) and offset (init 0), which is
    exactly ``num_gates`` independent LayerNorms with one kernel call.
    """

    def __init__(self, num_gates: int, size: int, eps: float = LN_EPS,
                 initial_offsets: Optional[Sequence[float]] = None) -> None:
        super().__init__()
        self.num_gates = num_gates
        self.size = size
        self.eps = eps
        # Per gate, the offset it starts from (0 for every gate unless a unit asks otherwise,
        # e.g. a T-GRU started toward carrying its state: DTMTOptions.carry_bias).
        self.initial_offsets = tuple(initial_offsets or (0.0,) * num_gates)
        if len(self.initial_offsets) != num_gates:
            raise ValueError(f"{num_gates} gates, {len(self.initial_offsets)} initial offsets")
        self.gain = nn.Parameter(torch.ones(num_gates * size))
        self.offset = nn.Parameter(torch.zeros(num_gates * size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.gain)
        with torch.no_grad():
            for k, value in enumerate(self.initial_offsets):
                self.offset[k * self.size:(k + 1) * self.size] = value

    def reset_norm_parameters(self) -> None:
        """The identity start (gain 1, offset 0 or the gate's initial offset) that
        `uniform_init_` restores after drawing every parameter uniformly: a normalisation
        that starts with gains near 0 (some negative) scales every gate pre-activation down
        to almost nothing."""
        self.reset_parameters()

    def forward(self, z: Tensor) -> Tensor:
        shape = z.shape
        normed = F.layer_norm(z.reshape(*shape[:-1], self.num_gates, self.size), (self.size,), eps=self.eps)
        return torch.addcmul(self.offset, normed.reshape(shape), self.gain)

    def extra_repr(self) -> str:
        return f"num_gates={self.num_gates}, size={self.size}, eps={self.eps}"


class Cell(nn.Module):
    """Base class of all recurrent units.

    Attributes:
        input_size: size of the input vectors x_t.
        hidden_size: size of the output h_t seen by the rest of the model.
        state_size: size of the carried state (``hidden_size`` for all units but LSTM).
        proj_size: size of ``project_inputs``' output per time step.
        gate_names: names of the gates returned by ``step(..., return_gates=True)``.
        input_names, recurrent_names: the papers' names of the matrices stored side by side
            in ``weight_x`` and ``weight_h`` (``hidden_size`` columns each), for `matrices`.
        bias_names: the same for the blocks of ``bias``; with gate layer norm only the last
            (the candidate's) is left, the gates' biases being the norms' own.
    """

    input_size: int
    hidden_size: int
    state_size: int
    proj_size: int
    gate_names: Tuple[str, ...] = ()
    input_names: Tuple[str, ...] = ()
    recurrent_names: Tuple[str, ...] = ()
    bias_names: Tuple[str, ...] = ()

    def __init__(self, input_size: int, hidden_size: int, layer_norm: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        name = type(self).__name__
        if not isinstance(input_size, int) or isinstance(input_size, bool) or input_size < 0:
            raise UserError(f"{name}: input_size must be a non-negative integer, got {input_size!r}")
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool) or hidden_size <= 0:
            raise UserError(f"{name}: hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0.0 <= dropout < 1.0:
            raise UserError(f"{name}: option 'dropout' must be a number in [0, 1), got {dropout!r}")
        if not isinstance(layer_norm, bool):
            raise UserError(f"{name}: option 'layer_norm' must be true or false, got {layer_norm!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.state_size = hidden_size
        self.layer_norm = layer_norm
        self.dropout = float(dropout)

    def fused_step_on_cuda(self) -> bool:
        """Whether a training step of this unit on a GPU is already one fused kernel each way
        (the GRU's once accelerated, `rnmt.fast.gru_cuda`), so compiling it gains nothing (`train.compile_step`)."""
        return False

    # ----------------------------------------------------------------- interface
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

    def lockstep(self, other: Cell, like: Tensor) -> Optional[Callable[[Tensor, Tensor], Tensor]]:
        """A step function that advances this unit and ``other`` (another unit of the same kind
        and size, e.g. the two directions of a bidirectional encoder) together on stacked
        inputs: ``step(px [2, B, proj_size], state [2, B, state_size]) -> new state``, with
        one batched product for both units' recurrent matrices. None where this unit has no
        such step or it does not apply to tensors like ``like`` (the default)."""
        return None

    def pooled_run(self, px: Tensor, mask: Tensor, state: Tensor, mode: str) -> Optional[Tensor]:
        """The unit run over every position of ``px`` [B, S, proj_size] from ``state``, rows
        stopping at their last real token (``mask`` [B, S]), pooled: the mean of the outputs
        ("mean") or the last state's output ("last"), in one call where the unit has one;
        None (the default) where the caller steps through the positions itself."""
        return None

    def may_read_host(self) -> bool:
        """Whether the step loop may read the padding mask on the host to skip the masking
        of steps without padding (`rnmt.cells.runner`); the values are the same either way."""
        return True

    def output(self, state: Tensor) -> Tensor:
        """The visible output h_t of a state (the state itself for all units but LSTM)."""
        return state

    def init_state(self, batch_size: int, like: Tensor) -> Tensor:
        """A zero state on the device and dtype of ``like``."""
        return like.new_zeros(batch_size, self.state_size)

    def forward(self, x: Tensor, state: Tensor) -> Tensor:
        """Convenience: one step from an unprojected input x [B, input_size]."""
        return self.step(self.project_inputs(x), state)

    def matrices(self) -> Dict[str, Tensor]:
        """The unit's weight matrices under the papers' names, as views into its parameters.

        Units store all input-side matrices side by side in one parameter (and all
        recurrent-side ones in another) so that each side is one matrix product; this maps
        the fused storage back to the equations, for tests and analysis. Every matrix is
        ``[in, out]``: it is applied as ``x @ W``.
        """
        if not (self.input_names or self.recurrent_names):
            raise NotImplementedError(f"{type(self).__name__} names no matrices")
        d = self.hidden_size
        mats = split_columns(self.weight_x, self.input_names, d) if self.input_names else {}
        return {**mats, **split_columns(self.weight_h, self.recurrent_names, d)}

    def biases(self) -> Dict[str, Tensor]:
        """The unit's bias vectors under the papers' names (`bias_names`), as views."""
        bias = getattr(self, "bias", None)
        if bias is None:
            return {}
        if not self.bias_names:
            raise NotImplementedError(f"{type(self).__name__} names no biases")
        names = self.bias_names[-1:] if getattr(self, "gate_norm", None) is not None else self.bias_names
        d = self.hidden_size
        return {name: bias[i * d : (i + 1) * d] for i, name in enumerate(names)}

    # ----------------------------------------------------------------- helpers
    def recurrent_product(self, state: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        """``state @ weight_h (+ bias)``: the step's one fused product with all recurrent matrices.

        ``bias`` is a vector or a ``[B, k*d]`` addend (e.g. the step's projected input).
        """
        if bias is None:
            return torch.matmul(state, self.weight_h)
        return torch.addmm(bias, state, self.weight_h)

    def input_product(self, x: Tensor) -> Tensor:
        """``x @ weight_x``: the input-side product of one step or of all steps at once."""
        return torch.matmul(x, self.weight_x)

    def drop_candidate(self, candidate: Tensor) -> Tensor:
        """Dropout on the candidate activation with a fresh mask per call (training only)."""
        if self.dropout > 0.0 and self.training:
            return F.dropout(candidate, self.dropout, True)
        return candidate

    def reset_parameters(self) -> None:
        """Matrices ~ U(-1/sqrt(d), 1/sqrt(d)) as torch.nn.GRU does, biases 0, LN gains 1."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for param in self.parameters(recurse=False):
            if param.dim() >= 2:
                nn.init.uniform_(param, -bound, bound)
            else:
                nn.init.zeros_(param)
        for module in self.children():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def extra_repr(self) -> str:
        return (
            f"input_size={self.input_size}, hidden_size={self.hidden_size}, "
            f"layer_norm={self.layer_norm}, dropout={self.dropout}"
        )


def interpolate(start: Tensor, end: Tensor, weight: Tensor) -> Tensor:
    """``(1 - weight) * start + weight * end`` (``torch.lerp``) in the widest of the three
    dtypes. Under bf16 autocast a unit's products come out in bf16 while its layer
    normalisations come out in fp32, and ``torch.lerp`` refuses mixed dtypes; in full
    precision the casts are no-ops."""
    dtype = torch.promote_types(torch.promote_types(start.dtype, end.dtype), weight.dtype)
    return torch.lerp(start.to(dtype), end.to(dtype), weight.to(dtype))


def split_columns(weight: Tensor, names: Tuple[str, ...], size: int) -> Dict[str, Tensor]:
    """Views of consecutive column blocks of width ``size`` of a fused ``[in, k*size]`` matrix."""
    return {name: weight[:, i * size : (i + 1) * size] for i, name in enumerate(names)}


Gates = Dict[str, Tensor]
OptionalGates = Optional[Dict[str, Tensor]]
