"""When a run stops before ``train.max_steps``, and the dev-metric bookkeeping behind it.

`Stopping` holds every rule the loop asks about:

- a signal or the wall-clock budget (``train.max_minutes``), agreed over all processes by
  one all-reduce per update (`requested`);
- non-finite updates: each is skipped, ``train.max_nonfinite`` in a row stop the run
  (`after_update`);
- a loss that exploded while staying finite (`rnmt.training.divergence`);
- after a validation, patience (``train.patience``) and the ``plateau`` schedule's decays
  (``train.plateau_patience``), counted in the run's `Progress` so that a resumed run
  continues the counts (`after_validation`, `patience_spent`).

The loop owns the order of these calls; the rules own the counting and the messages.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch

from rnmt.config import TrainConfig
from rnmt.training.distributed import DistContext
from rnmt.training.divergence import DivergenceWatch
from rnmt.training.signals import StopSignals
from rnmt.training.state import Progress
from rnmt.training.validator import improves


class Stopping:
    """The stopping rules of one sitting of a run (see the module's docstring)."""

    def __init__(self, tc: TrainConfig, dist: DistContext, device: torch.device, tgt_vocab_size: int,
                 out: Path, log: Callable[..., None]) -> None:
        self.tc, self.dist, self.device, self.log = tc, dist, device, log
        self.budget = tc.max_minutes * 60 if tc.max_minutes else None
        self.nonfinite_run = 0  # updates skipped in a row (not saved: a resumed run starts afresh)
        self.divergence = DivergenceWatch(tc, tgt_vocab_size, out)

    def requested(self, signals: StopSignals, progress: Progress) -> Optional[str]:
        """``"signal"``, ``"time_budget"`` or None; one all-reduce agrees on it over all ranks."""
        flags = [float(signals.received is not None),
                 float(self.budget is not None and progress.train_seconds >= self.budget)]
        if self.dist.enabled:
            flags = self.dist.all_reduce_sum(flags, self.device)
        if flags[0] > 0:
            return "signal"
        if flags[1] > 0:
            return "time_budget"
        return None

    def after_update(self, stats: Dict[str, Any], progress: Progress) -> bool:
        """Count an update's outcome; True when it was skipped (a non-finite loss or
        gradient). A finite one feeds the divergence watch, which raises the run's error
        once the loss has exploded (no checkpoint of such weights is written)."""
        if stats.get("skipped"):
            progress.nonfinite_total += 1
            self.nonfinite_run += 1
            return True
        self.nonfinite_run = 0
        self.divergence.add(progress.step, stats["nll"], stats["ntokens"])
        self.divergence.check(progress.step, progress.checkpoints)
        return False

    def too_many_nonfinite(self) -> bool:
        return self.nonfinite_run >= self.tc.max_nonfinite

    def before_checkpoint(self, progress: Progress) -> None:
        """Refuse to write a checkpoint of a diverged model, whatever the window holds yet."""
        self.divergence.check(progress.step, progress.checkpoints, full_window=False)

    def after_validation(self, progress: Progress, value: float, bleu: float) -> bool:
        """Record a validation's ``train.best_metric`` ``value``; True when it is the best so far."""
        if improves(self.tc.best_metric, value, progress.best_value):
            progress.best_value, progress.best_bleu, progress.best_step = value, bleu, progress.step
            progress.bad_validations = progress.plateau_bad = 0
            return True
        progress.bad_validations += 1
        self._note_plateau(progress)
        return False

    def _note_plateau(self, progress: Progress) -> None:
        """One more validation without improvement: under the ``plateau`` schedule, the
        ``plateau_patience``-th in a row since the last improvement or decay decays the rate."""
        tc = self.tc
        if tc.schedule != "plateau":
            return
        progress.plateau_bad += 1
        if progress.plateau_bad >= tc.plateau_patience:
            progress.plateau_decays += 1
            progress.plateau_bad = 0
            self.log(f"step {progress.step:>6}  dev {tc.best_metric} has not improved for {tc.plateau_patience} "
                     f"validations: learning rate x{tc.decay_rate:g} (decay {progress.plateau_decays})")

    def patience_spent(self, progress: Progress) -> bool:
        """Early stopping: ``train.patience`` validations in a row without a new best."""
        return self.tc.patience is not None and progress.bad_validations >= self.tc.patience


def is_finite_update(loss_value: float, norm: torch.Tensor) -> bool:
    """Whether an update may reach the weights: a finite loss and a finite gradient norm."""
    return math.isfinite(loss_value) and bool(torch.isfinite(norm))
