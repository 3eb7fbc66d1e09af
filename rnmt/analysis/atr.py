"""ATR as a weighted sum of its inputs (ATR paper, section 3.3, eq. 10) and gate statistics.

Unrolling h_t = i_t * p_t + f_t * h_{t-1} (eq. 9) gives exactly

    h_t = sum_{k<=t} g_{t,k} * p_k  +  (prod_{l<=t} f_l) * h_0,
    g_{t,t} = i_t,   g_{t,k} = i_k * prod_{l=k+1..t} f_l   (k < t),

element-wise over hidden units. ``p_k`` is the projected input the unit really adds: for
`rnmt.cells.ATR` that is ``project_inputs(x_k)`` = W_x x_k, layer-normalised when the unit
has ``layer_norm`` (the bias sits on the recurrent side q and so only enters the gates).
The decomposition is exact in evaluation mode, where candidate dropout is off; the
functions here switch the unit to evaluation mode while they run.

Padded steps copy the state (rnmt.cells.runner), which is the same as i = 0, f = 1 there,
so padded positions get zero weight and do not decay anything; their own rows (the weights
"of the state at a padded position") are zero, as `run_cell`'s outputs there are.

`chain_weights` works on any chain of ATR updates given as (i, f) sequences, e.g. the
decoder's alternation of unit 1 and unit 2 (`decoder_chain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import Tensor

from rnmt.cells.atr import ATR
from rnmt.cells.runner import run_cell


@dataclass
class DependencyWeights:
    """Result of `dependency_weights` (batch-first, T = sequence length, H = hidden size).

    g: ``[B, T, T, H]`` with ``g[b, t, k]`` the weight of input k in state t (zero for k
    after t in walking order), or None when only the mean was asked for.
    mean: ``[B, T, T]``, g averaged over hidden units.
    decay: ``[B, T, H]``, the factor of the initial state h_0 in h_t.
    p: ``[B, T, H]``, the projected inputs p_k.
    states: ``[B, T, H]``, the unit's states h_t as `run_cell` computes them.
    h0: ``[B, H]``, the initial state.
    gates: the unit's gates ``{"i", "f"}``, ``[B, T, H]``.
    """

    g: Optional[Tensor]
    mean: Tensor
    decay: Tensor
    p: Tensor
    states: Tensor
    h0: Tensor
    gates: Dict[str, Tensor]

    def reconstruct(self) -> Tensor:
        """sum_k g_{t,k} p_k + decay_t h_0: equals `states` (needs the full ``g``)."""
        if self.g is None:
            raise ValueError("reconstruct needs the full weights: call with full=True")
        p = self.p.to(self.g.dtype)
        return torch.einsum("btkh,bkh->bth", self.g, p) + self.decay * self.h0.to(self.g.dtype).unsqueeze(1)


def chain_weights(i: Tensor, f: Tensor, mask: Optional[Tensor] = None, reverse: bool = False,
                  full: bool = True, dtype: torch.dtype = torch.float64) -> Tuple[Optional[Tensor], Tensor, Tensor]:
    """Weights of eq. 10 for a chain of updates h_t = i_t * p_t + f_t * h_{t-1}.

    Args:
        i, f: gates ``[B, T, H]`` in position order.
        mask: ``[B, T]`` bool, True on real steps (padded steps: i = 0, f = 1).
        reverse: the chain walks t = T-1 .. 0 (a backward encoder).
        full: also return the full ``[B, T, T, H]`` weights (memory B*T*T*H); the mean over
            hidden units is always returned.
        dtype: computation precision.

    Returns:
        (g or None, mean [B, T, T], decay [B, T, H]), indexed [b, t, k] by positions.
    """
    i, f = i.to(dtype), f.to(dtype)
    if mask is not None:
        m = mask.to(torch.bool).unsqueeze(-1)
        i = torch.where(m, i, torch.zeros_like(i))
        f = torch.where(m, f, torch.ones_like(f))
    B, T, H = i.shape
    row = i.new_zeros(B, T, H)  # weights of every input k in the current state
    decay = i.new_ones(B, H)
    mean = i.new_zeros(B, T, T)
    g = i.new_zeros(B, T, T, H) if full else None
    decays = i.new_zeros(B, T, H)
    order = range(T - 1, -1, -1) if reverse else range(T)
    for t in order:
        row = row * f[:, t].unsqueeze(1)
        row[:, t] = i[:, t]
        decay = decay * f[:, t]
        decays[:, t] = decay
        mean[:, t] = row.mean(-1)
        if full:
            g[:, t] = row
    if mask is not None:  # padded positions have zero outputs in run_cell: zero rows here too
        real = mask.to(torch.bool)
        decays = decays * real.unsqueeze(-1)
        mean = mean * real.unsqueeze(-1)
        if full:
            g = g * real[:, :, None, None]
    return g, mean, decays


@torch.no_grad()
def dependency_weights(cell: ATR, x: Tensor, mask: Optional[Tensor] = None, reverse: bool = False,
                       state0: Optional[Tensor] = None, full: bool = True,
                       dtype: torch.dtype = torch.float64) -> DependencyWeights:
    """Run an ATR unit over ``x`` [B, T, input_size] and decompose its states (eq. 10).

    The states are those of `run_cell` (same masking and direction); ``g`` uses the
    gates and projected inputs that run produced, so ``reconstruct()`` matches the states
    up to floating-point rounding.
    """
    if not isinstance(cell, ATR):
        raise TypeError(f"dependency weights are defined for ATR units, got {type(cell).__name__}")
    was_training = cell.training
    cell.eval()
    try:
        states, _, gates = run_cell(cell, x, mask, reverse=reverse, state0=state0, return_gates=True)
        p = cell.project_inputs(x)
    finally:
        cell.train(was_training)
    h0 = cell.init_state(x.size(0), p) if state0 is None else state0
    g, mean, decay = chain_weights(gates["i"], gates["f"], mask, reverse=reverse, full=full, dtype=dtype)
    return DependencyWeights(g, mean, decay, p, states, h0, gates)


def decoder_chain(trace: Dict[str, Tensor], full: bool = True, dtype: torch.dtype = torch.float64,
                  units: Sequence[str] = ("unit1", "unit2")) -> Tuple[Optional[Tensor], Tensor, Tensor]:
    """Eq. 10 for a decoder whose state passes through ATR ``units`` in turn at every step,
    as the two-level decoder of RNNSearch (ATR paper eq. 13) does.

    ``trace`` is a model's ``decoder_trace`` output (`rnmt.models.reports`) for one or more
    sentences. With the two units, the state alternates s~_j = ATR_1(s_{j-1}, E y_{j-1})
    and s_j = ATR_2(s~_j, c_j), one chain of 2J updates: update 2j is unit 1 at step j,
    update 2j+1 is unit 2. Returns the chain weights (g, mean, decay) over those n*J
    positions (n units); s~_j's weight on the target word input of step k is
    ``mean[:, n*j, n*k]``. The initial state s_0 is not zero, so its decayed term matters.
    """
    def interleave(gate: str) -> Tensor:
        return torch.stack([trace[f"{u}.{gate}"] for u in units], 2).flatten(1, 2)

    return chain_weights(interleave("i"), interleave("f"), full=full, dtype=dtype)


def strongest_previous(mean: np.ndarray) -> List[Optional[int]]:
    """For each position t of a ``[T, T]`` weight matrix (rows t, columns k), the earlier
    position k < t with the largest weight (None for t = 0)."""
    m = np.asarray(mean)
    return [None if t == 0 else int(np.argmax(m[t, :t])) for t in range(m.shape[0])]


def pearson(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
    """Pearson's correlation coefficient of two equally long samples (None if undefined)."""
    a, b = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"samples differ in length: {a.size} and {b.size}")
    if a.size < 2:
        return None
    da, db = a - a.mean(), b - b.mean()
    denom = np.sqrt((da * da).sum() * (db * db).sum())
    if denom == 0.0:
        return None
    return float((da * db).sum() / denom)


def position_means(sequences: Sequence[Sequence[float]]) -> Tuple[np.ndarray, np.ndarray]:
    """Average per position over sequences of different lengths: (means, counts)."""
    length = max((len(s) for s in sequences), default=0)
    total = np.zeros(length)
    count = np.zeros(length, dtype=np.int64)
    for s in sequences:
        s = np.asarray(s, dtype=np.float64)
        total[: s.size] += s
        count[: s.size] += 1
    return total / np.maximum(count, 1), count
