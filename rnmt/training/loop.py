"""The training loop: updates until ``train.max_steps`` or a stopping rule, then the last save.

`train_until_done` is what `Trainer.run` runs. Each iteration asks the stopping rules
whether to stop (one all-reduce under torchrun), draws the update's batches
(`rnmt.training.batches`), runs `Trainer.train_step`, and then, in this order: counts the
update (`rnmt.training.stopping`: a skipped non-finite update, a diverged loss), logs the
interval (`rnmt.training.reporting`), and validates and checkpoints when due
(`validate_and_save`, `Trainer.save`, `rnmt.training.run_checkpoints`).

The collaborators are called explicitly, here, rather than as hooks on a list of callbacks
(the split of fairseq's ``train.py`` into its loop, ``validate_and_save`` and
``checkpoint_utils``): the order is part of the contract. Under torchrun every process must
reach the same collectives in the same order (the stop agreement every update, the
broadcast of rank 0's validation, the gather of random states in a save), and a
checkpoint must follow the validation that decides whether it is the best; with explicit
calls the order can be read in one place, and a change to it is a change to this module.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from rnmt.errors import UserError
from rnmt.training import run_checkpoints
from rnmt.training.batches import TrainBatch, UpdateBatches
from rnmt.training.reporting import LossWindow
from rnmt.training.schedules import learning_rate
from rnmt.training.setup import STATE_FILE
from rnmt.training.signals import StopSignals
from rnmt.training.validator import BEST_METRICS

if TYPE_CHECKING:
    from rnmt.training.trainer import Trainer


@dataclass
class Sitting:
    """The loop's bookkeeping for one sitting of a run (nothing of it is saved)."""

    validated_at: int  # the update of the last validation (or the sitting's first)
    saved_at: int  # the update of the last checkpoint (or the sitting's first)
    window: LossWindow = field(default_factory=LossWindow)  # the updates not logged yet
    last: Dict[str, Any] = field(default_factory=dict)  # the last logged interval's record


def train_until_done(trainer: Trainer, signals: StopSignals) -> Dict[str, Any]:
    """Run updates until ``train.max_steps``, the end of ``train.max_epochs``, early
    stopping, the time budget or a signal; save, and return the run's summary."""
    tc = trainer.cfg.train
    trainer.start_sitting()
    trainer.model.train()
    sitting = Sitting(validated_at=trainer.step, saved_at=trainer.step)
    stop_reason = "max_steps"
    trainer.report.open_bar(trainer.step)
    updates = UpdateBatches(trainer.sampler, tc.accumulate, tc.max_epochs)
    trainer.consistent = run_checkpoints.snapshot(trainer)
    while trainer.step < tc.max_steps:
        stop = trainer.stopping.requested(signals, trainer.progress)
        if stop:
            stop_reason = stop
            break
        batches = updates.next_update()
        if not batches:
            stop_reason = "max_epochs"
            break
        if _update(trainer, batches, sitting):
            stop_reason = "early_stopping"
            break
    trainer.report.close_bar()
    return _finish(trainer, stop_reason, signals, sitting)


def _update(trainer: Trainer, batches: List[TrainBatch], sitting: Sitting) -> bool:
    """One update with what follows it (counting, logging, validation, checkpoint); True
    when early stopping ends the run."""
    tc = trainer.cfg.train
    t0 = time.perf_counter()
    stats = trainer.train_step(batches)
    trainer.heap_trim.after_update()
    elapsed = time.perf_counter() - t0
    trainer.progress.train_seconds += elapsed
    trainer.consistent = run_checkpoints.snapshot(trainer)
    if trainer.stopping.after_update(stats, trainer.progress):  # skipped: non-finite
        trainer.report.skipped(trainer.step, trainer.nonfinite_run, trainer.progress)
        if trainer.stopping.too_many_nonfinite():
            trainer.save()  # the weights are still finite: keep the data position
            raise UserError(f"{trainer.nonfinite_run} non-finite losses in a row at step {trainer.step} "
                            f"(train.max_nonfinite); the last checkpoint, ckpt-{trainer.step}, has finite "
                            f"weights: lower train.lr or check the data before resuming")
        return False
    sitting.window.add(stats, elapsed)
    trainer.report.updated()
    if trainer.step % tc.log_every == 0 or trainer.step == tc.max_steps:
        sitting.last = trainer.report.interval(sitting.window, trainer.step, trainer.sampler.epoch, stats["lr"],
                                               trainer.progress)
        sitting.window = LossWindow()
    save_every = tc.save_every if tc.save_every is not None else tc.validate_every
    if trainer.has_dev and tc.validate_every and trainer.step % tc.validate_every == 0:
        sitting.validated_at = sitting.saved_at = trainer.step
        return validate_and_save(trainer)
    if save_every and trainer.step % save_every == 0:
        trainer.save()
        sitting.saved_at = trainer.step
    return False


def validate_and_save(trainer: Trainer) -> bool:
    """Validate (rank 0 only), checkpoint, and say whether early stopping should end
    training; every rank gets rank 0's verdict."""
    metrics: Dict[str, float] = {}
    bleu: Optional[float] = None
    improved = False
    p = trainer.progress
    if trainer.is_main:
        with run_checkpoints.averaged(trainer.average):
            metrics = trainer.validate()
        bleu = metrics["dev_bleu"]
        improved = trainer.stopping.after_validation(p, metrics[BEST_METRICS[trainer.cfg.train.best_metric]], bleu)
    if trainer.dist.enabled:
        (p.best_value, p.best_bleu, p.best_step, p.bad_validations, p.plateau_bad, p.plateau_decays, bleu,
         improved) = trainer.dist.broadcast_object(
            (p.best_value, p.best_bleu, p.best_step, p.bad_validations, p.plateau_bad, p.plateau_decays, bleu,
             improved))
    trainer.save(dev_bleu=bleu, improved=improved)
    trainer.report.validation(metrics, p, improved, trainer.wall_seconds())
    return trainer.stopping.patience_spent(p)


def _finish(trainer: Trainer, stop_reason: str, signals: StopSignals, sitting: Sitting) -> Dict[str, Any]:
    """The last interval's record and the final checkpoint (validated unless a signal
    stopped the run: a stopping process has seconds, not minutes); the summary."""
    tc = trainer.cfg.train
    if sitting.window.steps:
        lr = learning_rate(tc, max(trainer.step - 1, 0), trainer.sampler.epoch, trainer.progress.plateau_decays)
        sitting.last = trainer.report.interval(sitting.window, trainer.step, trainer.sampler.epoch, lr,
                                               trainer.progress)
    has_state = (trainer.out / STATE_FILE).exists()
    if stop_reason == "signal":
        trainer.stop_signal = signals.name or "signal"
        trainer.log(f"{trainer.stop_signal}: stopping at step {trainer.step}")
        if trainer.dist.broadcast_object(trainer.step != sitting.saved_at or not has_state):
            trainer.save()
    else:
        final = (trainer.step != sitting.validated_at if trainer.has_dev else trainer.step != sitting.saved_at) \
            or not has_state
        if trainer.dist.broadcast_object(final):  # rank 0's file system decides
            if trainer.has_dev:
                validate_and_save(trainer)
            else:
                trainer.save()
    return _summary(trainer, stop_reason, sitting.last)


def _summary(trainer: Trainer, stop_reason: str, last: Dict[str, Any]) -> Dict[str, Any]:
    p, tc = trainer.progress, trainer.cfg.train
    summary: Dict[str, Any] = {
        "steps": p.step, "stop_reason": stop_reason, "train_seconds": round(p.train_seconds, 1),
        "wall_seconds": round(trainer.wall_seconds(), 1), "best_dev_bleu": p.best_bleu,
        "best_metric": tc.best_metric, "best_value": p.best_value, "best_step": p.best_step,
        **{k: last[k] for k in ("loss", "tokens_per_s") if k in last}}
    if p.nonfinite_total:
        summary["skipped_nonfinite"] = p.nonfinite_total
    trainer.log("training finished: " + json.dumps(summary))
    return summary
