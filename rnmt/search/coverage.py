"""GNMT's coverage penalty (Wu et al. 2016, "Google's Neural Machine Translation System",
section 7): a finished hypothesis Y of source X scores

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y),    cp(X; Y) = beta * sum_i log(min(sum_j p_ij, 1))

where p_ij is the attention weight of target step j on source position i (every step of
the hypothesis, its end of sentence included; every real source position, the source's own
end mark included). A source word the hypothesis never attended to costs up to
``beta * log(FLOOR)``; one attended to with a total weight of 1 or more costs nothing. So a
translation that stops before it has covered the source, or that keeps attending to the
same words, ranks lower. The penalty changes which finished hypotheses win, not which ones
the beam keeps (as the length penalty does here): the beam itself still ranks by
log-probability.

The search keeps, per hypothesis, the sum of its attention rows over the steps taken so far
(``[rows, S]``), selected with the beam like the token history.
"""

from __future__ import annotations

from typing import Optional

from torch import Tensor

from rnmt.errors import UserError

# The smallest attention total a source word is credited with: log(0) would make one
# unattended word end a hypothesis's chances outright (beta * log(1e-6) = -2.8 at beta 0.2).
FLOOR = 1e-6


class Coverage:
    """Attention totals of a beam's hypotheses and their coverage penalty."""

    def __init__(self, beta: float, src_mask: Tensor, K: int) -> None:
        self.beta = beta
        self.K = K
        self.mask = src_mask.float()  # [b, S]: 1 at a real source position
        self.totals: Optional[Tensor] = None  # [b * K, S] before this step
        self.now: Optional[Tensor] = None  # [b * K, S] with this step's attention

    @staticmethod
    def of(beta: float, src_mask: Tensor, K: int) -> Optional[Coverage]:
        """The tracker for ``beta`` > 0; None (nothing tracked, nothing computed) for 0."""
        return Coverage(beta, src_mask, K) if beta > 0 else None

    def add_step(self, extras: dict) -> None:
        """Add this step's attention (``extras["attention"]``, [rows, S]) to every hypothesis."""
        attention = extras.get("attention")
        if attention is None:
            raise UserError("the coverage penalty needs attention weights, and this model reports none "
                            "(search.coverage: 0 turns it off)")
        attention = attention.float()
        self.now = attention if self.totals is None else self.totals + attention

    def penalty(self, rows: Tensor) -> Tensor:
        """cp of the hypotheses in ``rows`` (after this step): ``[len(rows)]``."""
        assert self.now is not None, "add_step first"
        totals = self.now.index_select(0, rows).clamp(FLOOR, 1.0)
        return self.beta * (totals.log() * self.mask.index_select(0, rows // self.K)).sum(1)

    def advance(self, rows: Tensor) -> None:
        """The hypotheses that go on are those in ``rows``."""
        assert self.now is not None, "add_step first"
        self.totals = self.now.index_select(0, rows)

    def compact(self, keep: Tensor, keep_rows: Tensor) -> None:
        """Keep the sentences ``keep`` (their rows ``keep_rows``) when the batch is compacted."""
        self.mask = self.mask.index_select(0, keep)
        if self.totals is not None:
            self.totals = self.totals.index_select(0, keep_rows)
