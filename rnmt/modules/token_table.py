"""Per-token tables for decoding: what a decoder computes from the previous word alone.

At every decoding step an RNNSearch-style decoder multiplies the previous word's embedding
by fixed matrices (the first unit's input projection, the readout's ``W_2 E y_{j-1}``).
Those products depend on the word only, so at inference they can be computed once for the
whole target vocabulary and looked up: a [V, width] table replaces two products per
hypothesis and step (about 7% of an RNNSearch decoding step's multiply-adds at 256/512).

The table is rebuilt whenever a parameter it was computed from changes: an in-place change
bumps the tensor's version counter, `.to()` gives new storage. PyTorch's fused Adam (rnmt's
default optimizer) updates the weights without bumping the counters, so whatever changes
weights that way calls `forget_tables` after it; the trainer does after every optimizer step.
Until it did, validation between updates decoded RNNSearch with the table of its first
validation: the dev BLEU a converged run logged at update 7,500 was 25.16 where a fresh
process decoding that checkpoint scores 27.47. It is never used in training mode or when
gradients are recorded: there dropout and back-propagation need the products.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Tuple

import torch
from torch import Tensor, nn

MAX_TABLE_BYTES = 512 * 2**20  # beyond this (huge vocabularies x widths) the products stay


class TokenTable:
    """A lazily built table ``build()`` -> [V, width], cached while ``params`` are unchanged.

    Safe to look up from several threads at once (a server, or a user's own threads calling
    one model): the key and the table are one attribute, read once per lookup, so a thread
    never sees one without the other; two threads that find it missing may both build it."""

    def __init__(self) -> None:
        self._cached: Optional[Tuple[Tuple, Tensor]] = None  # (key, table)

    @staticmethod
    def applies(module: nn.Module, like: Tensor, rows: int, width: int) -> bool:
        """Inference (eval mode, no autograd, no autocast on ``like``'s device) and a table
        of at most MAX_TABLE_BYTES in ``like``'s dtype."""
        return (not module.training and not torch.is_grad_enabled()
                and not torch.is_autocast_enabled(like.device.type)
                and rows * width * like.element_size() <= MAX_TABLE_BYTES)

    @property
    def table(self) -> Optional[Tensor]:
        """The table as last built, or None."""
        cached = self._cached
        return None if cached is None else cached[1]

    def clear(self) -> None:
        """Forget the table: the next lookup builds it from the parameters as they are."""
        self._cached = None

    def lookup(self, tokens: Tensor, params: Iterable[Tensor], build: Callable[[], Tensor]) -> Tensor:
        """Rows ``tokens`` of the table, building it first if ``params`` changed since."""
        key = tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in params)
        cached = self._cached
        if cached is None or cached[0] != key:
            self._cached = None  # release the old table before building
            cached = (key, build())
            self._cached = cached
        return cached[1].index_select(0, tokens)


def forget_tables(model: nn.Module) -> None:
    """Clear every `TokenTable` of ``model``'s modules: after weights changed in place without
    their version counters (a fused optimizer step)."""
    for module in model.modules():
        for value in vars(module).values():
            if isinstance(value, TokenTable):
                value.clear()
