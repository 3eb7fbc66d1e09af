"""The bidirectional encoder layer of two GRUs in one cuDNN call on a GPU (`rnmt.fast.gru_cuda`)."""

from __future__ import annotations

from typing import Optional

from torch import Tensor

from rnmt.cells.runner import Bidirectional, BidirectionalOutput
from rnmt.fast import gru_cuda
from rnmt.fast.registry import variant


@variant(Bidirectional)
class FastBidirectional(Bidirectional):
    """`Bidirectional` whose two GRU directions run as one cuDNN call where it applies (a
    prefix mask without empty sentences on a GPU); the time loop otherwise."""

    def forward(self, x: Tensor, mask: Optional[Tensor] = None, return_gates: bool = False) -> BidirectionalOutput:
        if not return_gates and gru_cuda.bidirectional_applies(self.fwd, self.bwd, x):
            done = gru_cuda.run_bidirectional(self.fwd, self.bwd, x, mask)
            if done is not None:
                return BidirectionalOutput(*done, None)
        return super().forward(x, mask, return_gates)
