"""A training run: its parts, one update (`Trainer.train_step`) and its checkpoint (`Trainer.save`).

`Trainer(cfg, out_dir)` sets the run up and `run()` trains it. The jobs have a module each:

    rnmt.training.setup            everything before the first update (checks, data, model)
    rnmt.training.loop             the loop: updates until done, validation, the last save
    rnmt.training.batches          each update's batches, with their epoch and position
    rnmt.training.run_checkpoints  write, rotate, best, emergency save; restore (--resume)
    rnmt.training.reporting        log.jsonl, TensorBoard, terminal lines, the progress bar
    rnmt.training.stopping         signals, time budget, non-finite updates, divergence,
                                   patience and the plateau schedule's decays
    rnmt.training.validator        the dev loss, BLEU and chrF

Resume is exact: the model, the optimiser moments, the learning-rate schedule (a pure
function of the step, and for ``plateau`` of the decays counted so far), the position in
the epoch's batch order and the random generator are restored, so a stopped and resumed
run reproduces the losses of an uninterrupted one. SIGTERM and SIGINT stop the run at the
next update boundary with a checkpoint (`rnmt.training.signals`); a non-finite loss skips its
update (`train.max_nonfinite` in a row stop the run), a loss that exploded while staying
finite stops it (`rnmt.training.divergence`), and non-finite weights are never written;
every file is written atomically (`rnmt.training.checkpoint.atomic_write`).
docs/reliability.md lists the guarantees.

Data parallelism (docs/scaling.md): under ``torchrun`` every process trains a replica
wrapped in DistributedDataParallel on its own shard of the batches (rank r takes batches
r, r + N, ...). Each update's loss is divided by the target tokens of the whole update
over all processes, so N processes with batch B compute the gradient of one process
accumulating the same N batches. Rank 0 alone validates and writes checkpoints; its
early-stopping decision is broadcast to the others.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from rnmt import memory
from rnmt.config import Config
from rnmt.data import TokenBatchSampler, collate
from rnmt.data.collate import Batch
from rnmt.errors import UserError
from rnmt.modules.token_table import forget_tables
from rnmt.search.translator import Translator
from rnmt.training import run_checkpoints, update_graphs
from rnmt.training.batches import TrainBatch
from rnmt.training.checkpoint import atomic_write_text
from rnmt.training.distributed import DistContext
from rnmt.training.loop import train_until_done
from rnmt.training.loss import label_smoothed_nll
from rnmt.training.optimizers import build_optimizer
from rnmt.training.preflight import corpus_files
from rnmt.training.reporting import RunReport
from rnmt.training.schedules import learning_rate
from rnmt.training.setup import STATE_FILE, amp_dtype, resolve_amp, set_up_run
from rnmt.training.signals import StopSignals
from rnmt.training.state import Progress
from rnmt.training.stopping import Stopping, is_finite_update
from rnmt.training.update_graphs import UpdateGraphs
from rnmt.training.validator import BEST_METRICS, Validator
from rnmt.training.weight_average import WeightAverage

# Re-exported: callers import these from here (the CLI, the API, benchmarks, tests).
__all__ = ["Trainer", "STATE_FILE", "amp_dtype", "resolve_amp", "corpus_files", "BEST_METRICS"]


def _train_names(cfg: Config) -> str:
    train = cfg.data.train
    return str(train) if not isinstance(train, list) else ", ".join(c.prefix for c in train)


def _no_dev_set() -> Dict[str, float]:
    raise UserError("validation needs a dev set (data.dev)")


class Trainer:
    """A training run: `rnmt.training.setup` prepares it, this class runs the updates.

    The typed `Progress` (in ``progress``) is what a checkpoint saves and --resume restores;
    the collaborators (``report``, ``stopping``, `run_checkpoints`) read the run's current
    model, optimiser and sampler from here at each call.
    """

    def __init__(self, cfg: Config, out_dir: str | Path, resume: bool = False,
                 log=print, dist: Optional[DistContext] = None, corpus_changed_ok: bool = False,
                 init_from: Optional[str | Path] = None) -> None:
        memory.configure_process()  # before set_up_run's first oneDNN product
        run = set_up_run(cfg, out_dir, resume=resume, log=log, dist=dist, init_from=init_from)
        self.cfg, self.out, self.resume, self.dist, self.log = run.cfg, run.out, resume, run.dist, run.log
        self.is_main, self.device, self.amp_dtype, self.init = run.is_main, run.device, run.amp_dtype, run.init
        self.src_vocab, self.tgt_vocab, self.corpus, self.model = run.src_vocab, run.tgt_vocab, run.corpus, run.model
        self.data, self.plan = run.data, run.plan  # the plan is saved with the state (--resume reuses it)
        self._lock = run.lock  # released when run() ends
        self.corpus_changed_ok = corpus_changed_ok
        self.stop_signal: Optional[str] = None
        tc = cfg.train
        self.report = RunReport(self.out, tc, self.is_main, self.log)
        self.has_dev = bool(cfg.data.dev)
        self.optimizer = build_optimizer(self.model.parameters(), tc)
        self.average = WeightAverage(self.model, tc.ema_decay) if tc.ema_decay else None
        if self.average is not None:
            self.log(f"weight average: decay {tc.ema_decay:g}; validation and checkpoints hold the average")
        self.sampler = TokenBatchSampler(self.corpus.src_lens, self.corpus.tgt_lens, cfg.data.batch_tokens,
                                         shuffle=True, seed=tc.seed, rank=self.dist.rank,
                                         world_size=self.dist.world_size,
                                         plan=self.data.plan if self.data.varies else None)
        self.translator = Translator(self.model, self.src_vocab, self.tgt_vocab, cfg.search, self.device)
        # A callable attribute (not a method), so a test can stand in for validation.
        self.validate: Callable[[], Dict[str, float]] = (
            Validator(self.model, self.translator, run.dev, self.device, tc.validation_search)
            if run.dev is not None else _no_dev_set)
        self.progress = Progress()
        self.stopping = Stopping(tc, self.dist, self.device, self.tgt_vocab.size, self.out, self.log)
        self.heap_trim = memory.PeriodicTrim()  # freed host memory back to the system (rnmt.memory)
        # The data position and random state that match the weights and the step: what an
        # emergency save (a peer process died mid-update) must store.
        self.consistent: Optional[Dict[str, Any]] = None
        self._sitting_start: Optional[float] = None
        if resume:
            run_checkpoints.restore(self, corpus_changed_ok, _train_names(cfg))
            if self.is_main and run.config_changes:
                atomic_write_text(self.out / "config.yaml", cfg.dump())
                self.log("config changed on resume: " + "; ".join(run.config_changes))
        self.train_model = self._replica()
        self.update_graphs = self._set_up_graphs() if run.cuda_graphs else None

    def _replica(self) -> torch.nn.Module:
        """The replica that trains: DDP synchronises gradients in backward (and broadcasts
        rank 0's weights once, here). Saving, validation and search use the bare model."""
        if not self.dist.enabled:
            return self.model
        from torch.nn.parallel import DistributedDataParallel

        replica = DistributedDataParallel(
            self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.log(f"data parallel: {self.dist.world_size} processes ({self.dist.backend}), "
                 f"{self.cfg.train.accumulate} batch(es) per process and update")
        return replica

    def _set_up_graphs(self) -> UpdateGraphs:
        """The CUDA graphs of ``train.cuda_graphs`` (`update_graphs.choose` said yes)."""
        self.log(f"train.cuda_graphs: each update's forward and backward replayed from a CUDA graph per batch "
                 f"shape (rows and lengths padded to multiples of {update_graphs.BUCKET})")
        eps = self.cfg.train.label_smoothing
        return UpdateGraphs(self.model, lambda logits, target, mask: label_smoothed_nll(logits, target, mask, eps),
                            amp_dtype=self.amp_dtype, log=self.log)

    @property
    def step(self) -> int:
        """The number of updates done so far."""
        return self.progress.step

    @property
    def nonfinite_run(self) -> int:
        """Updates skipped in a row for a non-finite loss or gradient."""
        return self.stopping.nonfinite_run

    def start_sitting(self) -> None:
        """Start this sitting's wall clock (`wall_seconds` adds it to the earlier sittings')."""
        self._sitting_start = time.perf_counter()

    def wall_seconds(self) -> float:
        """Wall-clock seconds of this run over all its sittings, up to now."""
        started = self._sitting_start
        return self.progress.wall_seconds + (time.perf_counter() - started if started is not None else 0.0)

    # -- one update ----------------------------------------------------------------------
    def train_step(self, batches: Sequence[Union[TrainBatch, List[int]]]) -> Dict[str, Any]:
        """One optimiser update over ``batches`` (gradient accumulation), loss per target token.

        A `TrainBatch` is collated from its own epoch's data; a plain index list (a caller
        timing updates) from the sampler's current epoch. A non-finite loss or gradient
        leaves the weights alone and returns ``skipped``.
        """
        tc = self.cfg.train
        lr = learning_rate(tc, self.step, self.sampler.epoch, self.progress.plateau_decays)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        collated = [self._collate(b) for b in batches]
        ntokens = sum(b.ntokens for b in collated)
        world = self.dist.world_size
        if self.dist.enabled:
            # Normalise by the update's tokens over all processes; DDP averages the
            # gradients over the N ranks, hence the factor N.
            ntokens = int(self.dist.all_reduce_sum([ntokens], self.device)[0])
        loss_total: Any = 0.0  # becomes a tensor: summed on the device, read once
        nll_total: Any = 0.0
        for k, batch in enumerate(collated):
            # Only the update's last backward synchronises gradients between processes.
            sync = k == len(collated) - 1 or not self.dist.enabled
            loss, nll = self._forward_backward(batch, world, ntokens, sync)
            loss_total += loss.detach()
            nll_total += nll.detach()
        if self.dist.enabled:
            loss_total, nll_total = self.dist.all_reduce_sum([loss_total, nll_total], self.device)
        # The norm is computed even without clipping: an infinite gradient with a finite loss
        # (overflow in backward) must not reach the weights either. After DDP's all-reduce
        # every rank sees the same gradients, hence the same verdict.
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                              tc.clip_norm if tc.clip_norm > 0 else float("inf"))
        loss_value = float(loss_total)
        if not is_finite_update(loss_value, norm):
            self.optimizer.zero_grad(set_to_none=self.update_graphs is None)  # graphs keep .grad's addresses
            return {"skipped": True, "loss": loss_value, "lr": lr, "ntokens": ntokens}
        self.optimizer.step()
        forget_tables(self.model)  # fused Adam changes the weights without their version counters
        self.optimizer.zero_grad(set_to_none=self.update_graphs is None)  # graphs keep .grad's addresses
        self.progress.step += 1
        if self.average is not None:
            self.average.update(self.progress.step)
        return {"loss": loss_value / ntokens, "nll": float(nll_total) / ntokens, "lr": lr, "ntokens": ntokens}

    def _collate(self, batch: Union[TrainBatch, List[int]]) -> Batch:
        if isinstance(batch, TrainBatch):
            return collate(self.data.view(batch.epoch), batch.indices, self.device)
        return collate(self.data.view(self.sampler.epoch), batch, self.device)

    def _forward_backward(self, batch: Batch, world: int, ntokens: int, sync: bool) -> Tuple[Tensor, Tensor]:
        """The batch's loss and nll sums, with ``world / ntokens`` times the loss's gradient
        added to ``.grad``: replayed from a CUDA graph (``train.cuda_graphs``) or run here."""
        if self.update_graphs is not None:  # one process (no no_sync); autocast inside
            return self.update_graphs(batch, world / ntokens)
        with contextlib.nullcontext() if sync else self.train_model.no_sync():  # type: ignore[operator]
            with torch.autocast(self.device.type, dtype=self.amp_dtype or torch.bfloat16,
                                enabled=self.amp_dtype is not None):
                logits = self.train_model(batch.src, batch.src_mask, batch.tgt_in)
                loss, nll = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, self.cfg.train.label_smoothing)
            (loss * world / ntokens).backward()
        return loss, nll

    # -- checkpoints ---------------------------------------------------------------------
    def save(self, dev_bleu: Optional[float] = None, improved: bool = False, collective: bool = True) -> None:
        """Write a checkpoint and the resumable state: rank 0 writes, every rank calls it.

        ``collective=False`` (an interrupted run) skips the collectives: rank 0 then saves
        its own random state only. A diverged run raises its error instead.
        """
        self.stopping.before_checkpoint(self.progress)
        rank_rng = None
        if self.dist.enabled and collective:
            rank_rng = self.dist.all_gather_object(run_checkpoints.rng_state(self.device))
        if self.is_main:
            run_checkpoints.write_checkpoint(self, dev_bleu, improved, rank_rng)
        if self.dist.enabled and collective:
            self.dist.barrier()

    # -- the run -------------------------------------------------------------------------
    def run(self) -> Dict[str, Any]:
        """Train until ``train.max_steps`` or a stopping rule; the run's summary."""
        with StopSignals(self.log) as signals:
            try:
                return train_until_done(self, signals)
            except RuntimeError as exc:
                if not self.dist.enabled or isinstance(exc, UserError):
                    raise
                # A collective failed: a peer process died. Rank 0 saves what it has (the
                # weights and data position of the last whole update) without collectives.
                run_checkpoints.emergency_save(self, self.consistent)
                raise UserError(f"rank {self.dist.rank}: lost contact with the other processes at step "
                                f"{self.step} ({str(exc).splitlines()[0][:160]}); "
                                + ("saved a checkpoint, continue with --resume" if self.is_main
                                   else "rank 0 saves the checkpoint")) from None
            finally:
                if self._lock is not None:
                    self._lock.release()  # the directory may be trained again (a resume)
