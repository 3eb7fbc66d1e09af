"""Noticing a run whose loss has exploded while staying finite.

A non-finite loss skips its update (`rnmt.training.stopping`); a finite one far above any
loss a learning model has means the weights have been thrown somewhere useless (a
learning rate orders of magnitude too high, no gradient clipping, no warm-up), and every
further update only wastes time and writes checkpoints nobody wants.

The threshold: a model that predicts the uniform distribution over the target vocabulary
``V`` has a negative log-likelihood of ``log |V|`` per target token, and training starts
near it from the small uniform initialisation; a learning model goes below it.
`DivergenceWatch` stops the run when the mean training NLL per target token (without
label smoothing, whose extra term grows with a model's confidence) over the last `WINDOW`
updates after the warm-up exceeds `FACTOR` times ``log |V|`` (83 nats for the
quickstart's 4,000 subwords): ten times the starting loss is far outside anything a
healthy run reaches, and the window keeps one freak update from deciding. During the warm-up the rate is still rising,
so the first updates are left alone. Every process reads the same all-reduced losses, so
under torchrun every rank stops at the same update.
"""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path
from typing import Deque, List, Optional, Tuple

from rnmt.config import TrainConfig
from rnmt.errors import UserError

WINDOW = 10  # updates whose mean loss is compared with the threshold
FACTOR = 10.0  # times log(target vocabulary size), a starting model's loss
# The schedules that warm up over train.warmup_steps (the others start at their rate).
WARMUP_SCHEDULES = ("warmup_decay", "inverse_sqrt", "rnmt_plus", "plateau")


def threshold(tgt_vocab_size: int) -> float:
    """The loss per target token above which a run has diverged."""
    return FACTOR * math.log(max(tgt_vocab_size, 2))


def warmup_updates(tc: TrainConfig) -> int:
    return tc.warmup_steps if tc.schedule in WARMUP_SCHEDULES else 0


class DivergenceWatch:
    """The last `WINDOW` finite updates' NLL after the warm-up; `check` raises the
    run's one-line error once their mean is over the threshold."""

    def __init__(self, tc: TrainConfig, tgt_vocab_size: int, out: Path) -> None:
        self.tc, self.vocab, self.out = tc, tgt_vocab_size, out
        self.limit = threshold(tgt_vocab_size)
        self.warmup = warmup_updates(tc)
        self.recent: Deque[Tuple[float, int]] = deque(maxlen=WINDOW)  # (loss sum, target tokens)

    def add(self, step: int, nll_per_token: float, ntokens: int) -> None:
        """A finite update, the ``step``-th (1-based), and its NLL per target token."""
        if step > self.warmup:
            self.recent.append((nll_per_token * ntokens, ntokens))

    def mean(self) -> Optional[float]:
        tokens = sum(n for _, n in self.recent)
        return sum(s for s, _ in self.recent) / tokens if tokens else None

    def check(self, step: int, checkpoints: List[str], full_window: bool = True) -> None:
        """Raise if the run has diverged. ``full_window=False`` (before a checkpoint is
        written) judges the updates seen so far: a diverged model never replaces a good one."""
        if full_window and len(self.recent) < WINDOW:
            return
        mean = self.mean()
        if mean is None or mean <= self.limit:
            return
        kept = (f"the last good checkpoint, {checkpoints[-1]} in {self.out}, is kept" if checkpoints
                else f"no checkpoint was written yet in {self.out}")
        tc = self.tc
        clip = "train.clip_norm 0 (no gradient clipping)" if tc.clip_norm <= 0 else f"train.clip_norm {tc.clip_norm:g}"
        raise UserError(f"step {step}: the training loss diverged: NLL {mean:.3g} per target token over the last "
                        f"{len(self.recent)} updates, above {self.limit:.1f} ({FACTOR:g} x log of the "
                        f"{self.vocab}-subword target vocabulary, the loss a starting model has); likely "
                        f"causes: train.lr {tc.lr:g} too high, {clip}, a warm-up too short "
                        f"(train.warmup_steps {tc.warmup_steps}); {kept}")
