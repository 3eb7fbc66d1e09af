"""The training loop: batches -> loss -> optimiser step, with validation, checkpoints and resume.

The run is set up by `rnmt.training.setup`, its saved state is `rnmt.training.state.TrainState`,
and `rnmt.training.validator` scores the dev set; this module runs the updates around them.

Output directory layout:

    OUT/config.yaml          the resolved config
    OUT/config.source.yaml   the config file as `rnmt.train` last read it, before --set (what
                             --resume compares an edited file with: rnmt.training.resume)
    OUT/spm*.model           the sentencepiece model(s)
    OUT/ckpt-<step>.safetensors   the last ``train.keep_last`` checkpoints, and those at the
                             updates of ``train.keep_steps``
    OUT/best.safetensors     the checkpoint with the best dev BLEU, or the newest one when
                             there is no dev set (what `translate` and `serve` load)
    OUT/train_state.pt       optimiser, step, data position and random state (for --resume;
                             rnmt.training.state.TrainState); with train.ema_decay also
                             the training weights, while the checkpoints hold their average
                             (rnmt.training.weight_average)
    OUT/log.jsonl            one JSON object per logging interval and per validation
    OUT/tensorboard/         the same as TensorBoard events (train.tensorboard: true)

Resume is exact: the model, the optimiser moments, the learning-rate schedule (a pure
function of the step, and for ``plateau`` of the decays counted so far), the position in
the epoch's batch order and the random generator are restored, so a stopped and resumed
run reproduces the losses of an uninterrupted one. SIGTERM and SIGINT stop the run at the
next update boundary with a checkpoint (`rnmt.training.signals`); a non-finite loss skips its
update (`train.max_nonfinite` in a row stop the run) and non-finite weights are never
written; every file is written atomically (`rnmt.training.checkpoint.atomic_write`).
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
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Tuple

import torch
from torch import Tensor
from tqdm import tqdm

from rnmt import memory
from rnmt.config import Config
from rnmt.data import TokenBatchSampler, collate
from rnmt.data.collate import Batch
from rnmt.errors import UserError, write_failure
from rnmt.io.checkpoint_files import load_state_into
from rnmt.models.loading import read_checked
from rnmt.modules.token_table import forget_tables
from rnmt.search.translator import Translator
from rnmt.training import update_graphs
from rnmt.training.checkpoint import atomic_write_text, load_train_state, save_model, save_train_state
from rnmt.training.distributed import DistContext
from rnmt.training.loss import label_smoothed_nll
from rnmt.training.optimizers import build_optimizer
from rnmt.training.preflight import corpus_files
from rnmt.training.resume import check_corpus
from rnmt.training.schedules import learning_rate
from rnmt.training.setup import RANK_SEED_STRIDE, STATE_FILE, amp_dtype, resolve_amp, set_up_run
from rnmt.training.signals import StopSignals
from rnmt.training.state import Progress, TrainState
from rnmt.training.update_graphs import UpdateGraphs
from rnmt.training.validator import BEST_METRICS, Validator, improves
from rnmt.training.weight_average import WeightAverage, load_weights

# Re-exported: callers import these from here (the CLI, the API, benchmarks, tests).
__all__ = ["Trainer", "STATE_FILE", "amp_dtype", "resolve_amp", "corpus_files", "BEST_METRICS"]


def _train_names(cfg: Config) -> str:
    train = cfg.data.train
    return str(train) if not isinstance(train, list) else ", ".join(c.prefix for c in train)


def _no_dev_set() -> Dict[str, float]:
    raise UserError("validation needs a dev set (data.dev)")


class Trainer:
    """A training run: `rnmt.training.setup` prepares it, this class runs the updates.

    The jobs are split by module: `set_up_run` (checks, vocabularies, data, model), the
    typed `TrainState` and `Progress` (what a checkpoint saves and --resume restores), the
    `Validator` (dev loss, BLEU, chrF), and here the loop with its checkpoints.
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
        self.tensorboard = None
        if tc.tensorboard and self.is_main:
            from rnmt.training.tensorboard import TensorBoardLog

            self.tensorboard = TensorBoardLog(self.out / "tensorboard")
        self.has_dev = bool(cfg.data.dev)
        self.optimizer = build_optimizer(self.model.parameters(), tc)
        self.average = WeightAverage(self.model, tc.ema_decay) if tc.ema_decay else None
        if self.average is not None:
            self.log(f"weight average: decay {tc.ema_decay:g}; validation and checkpoints hold the average")
        self.sampler = TokenBatchSampler(self.corpus.src_lens, self.corpus.tgt_lens, cfg.data.batch_tokens,
                                         shuffle=True, seed=tc.seed, rank=self.dist.rank,
                                         world_size=self.dist.world_size,
                                         plan=self.data.plan if self.data.varies else None)
        self._batch_epochs: List[int] = []  # the epoch of each batch of the coming update
        self.translator = Translator(self.model, self.src_vocab, self.tgt_vocab, cfg.search, self.device)
        # A callable attribute (not a method), so a test can stand in for validation.
        self.validate: Callable[[], Dict[str, float]] = (
            Validator(self.model, self.translator, run.dev, self.device, tc.validation_search)
            if run.dev is not None else _no_dev_set)
        self.progress = Progress()
        self.nonfinite_run = 0  # updates skipped in a row (not saved: a resumed run starts afresh)
        self.heap_trim = memory.PeriodicTrim()  # freed host memory back to the system (rnmt.memory)
        # The data position and random state that match the weights and the step: what an
        # emergency save (a peer process died mid-update) must store.
        self._consistent: Optional[Dict[str, Any]] = None
        if resume:
            self._restore()
            if self.is_main and run.config_changes:
                atomic_write_text(self.out / "config.yaml", cfg.dump())
                self.log("config changed on resume: " + "; ".join(run.config_changes))
        # The replica that trains: DDP synchronises gradients in backward (and broadcasts
        # rank 0's weights once, here). Saving, validation and search use the bare model.
        self.train_model: torch.nn.Module = self.model
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel

            self.train_model = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
            self.log(f"data parallel: {self.dist.world_size} processes ({self.dist.backend}), "
                     f"{tc.accumulate} batch(es) per process and update")
        self.update_graphs = self._set_up_graphs() if run.cuda_graphs else None

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

    # -- checkpoints -------------------------------------------------------------------
    def _vocab_bytes(self) -> Dict[str, bytes]:
        return {"src": self.src_vocab.to_bytes(), "tgt": self.tgt_vocab.to_bytes()}

    def _rng_state(self) -> Dict[str, Any]:
        state = {"cpu": torch.get_rng_state()}
        if self.device.type == "cuda":
            state["cuda"] = torch.cuda.get_rng_state(self.device)
        return state

    def save(self, dev_bleu: Optional[float] = None, improved: bool = False, collective: bool = True) -> None:
        """Write a checkpoint and the resumable state: rank 0 writes, every rank calls it.

        ``collective=False`` (an interrupted run) skips the collectives: rank 0 then saves
        its own random state only.
        """
        rank_rng = None
        if self.dist.enabled and collective:
            rank_rng = self.dist.all_gather_object(self._rng_state())
        if self.is_main:
            self._write_checkpoint(dev_bleu, improved, rank_rng)
        if self.dist.enabled and collective:
            self.dist.barrier()

    def _snapshot(self) -> Dict[str, Any]:
        return {"sampler": self.sampler.state_dict(), "rng": torch.get_rng_state()}

    def _averaged(self) -> ContextManager[Optional[Dict[str, Tensor]]]:
        """The model holds the weights' average inside the block (train.ema_decay), which
        receives a copy of the training weights (None without an average)."""
        return self.average.applied() if self.average is not None else contextlib.nullcontext()

    def _check_finite(self) -> None:
        bad = [n for n, p in self.model.named_parameters() if not bool(torch.isfinite(p).all())]
        if bad:
            raise UserError(f"step {self.step}: weight '{bad[0]}' is not finite ({len(bad)} tensors); "
                            f"not writing it over a good checkpoint (the last one is in {self.out})")

    def _write_checkpoint(self, dev_bleu: Optional[float], improved: bool, rank_rng: Optional[list],
                          snapshot: Optional[Dict[str, Any]] = None) -> None:
        self._check_finite()
        snapshot = snapshot or self._snapshot()
        meta = {"step": self.step, "epoch": snapshot["sampler"]["epoch"], "dev_bleu": dev_bleu}
        if self.init is not None:
            meta["init_from"] = self.init.provenance
        name = f"ckpt-{self.step}.safetensors"
        with self._averaged() as train_weights:  # the checkpoints hold the model that is used
            if self.average is not None:
                self._check_finite()  # the average too (the training weights were checked above)
            save_model(self.out / name, self.model, self.cfg, self._vocab_bytes(), meta)
            # Without a dev set there is no "best": best.safetensors follows the newest
            # checkpoint, so a run directory always loads the newest weights.
            if improved or not self.has_dev or not (self.out / "best.safetensors").exists():
                save_model(self.out / "best.safetensors", self.model, self.cfg, self._vocab_bytes(), meta)
        progress = self.progress
        if name not in progress.checkpoints:
            progress.checkpoints.append(name)
        state = TrainState(
            progress=replace(progress, wall_seconds=self._wall_now(), checkpoints=list(progress.checkpoints)),
            checkpoint=name, optimizer=self.optimizer.state_dict(), sampler=snapshot["sampler"],
            rng=snapshot["rng"], cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            rank_rng=rank_rng, world_size=self.dist.world_size, corpus_key=self._corpus_key(),
            amp="bf16" if self.amp_dtype is not None else "fp32", plan=self.plan.to_dict() if self.plan else None,
            train_weights=train_weights)
        save_train_state(self.out / STATE_FILE, state.to_dict())
        # Old checkpoints go only after the state that no longer needs them is on disk.
        kept = {f"ckpt-{step}.safetensors" for step in self.cfg.train.keep_steps}
        while len(progress.checkpoints) > max(1, self.cfg.train.keep_last):
            old = progress.checkpoints.pop(0)
            if old not in kept:  # a kept one leaves the rotation, not the disk
                (self.out / old).unlink(missing_ok=True)

    def _corpus_key(self) -> Optional[str]:
        return self.data.key

    def _restore(self) -> None:
        path = self.out / STATE_FILE
        state = TrainState.from_dict(load_train_state(path), str(path))
        mf, _, _ = read_checked(self.out / state.checkpoint)
        load_state_into(self.model, mf.state, mf.path)
        if self.average is not None:
            self.average.restart_from_model()  # the checkpoint holds the average, when there was one
        if state.train_weights is not None:
            load_weights(dict(self.model.named_parameters()), state.train_weights, str(path))
            if self.average is None:
                self.log("the run averaged its weights (train.ema_decay), which is now off: training goes "
                         "on from its training weights")
        self.optimizer.load_state_dict(state.optimizer)
        changed = check_corpus(state.corpus_key, self._corpus_key(), _train_names(self.cfg),
                               self.corpus_changed_ok)
        self.sampler.load_state_dict(state.sampler)
        if changed:
            # The saved position indexes the old corpus: continue with the next epoch's order.
            self.sampler.set_epoch(self.sampler.epoch + 1)
            self.log(f"the training corpus changed since step {state.progress.step}: continuing at epoch "
                     f"{self.sampler.epoch} of the new corpus")
        self._restore_rng(state)
        self.progress = state.progress
        self.log(f"resumed from step {self.step} (epoch {self.sampler.epoch}, batch {self.sampler.position})"
                 + (f"; the run had {state.world_size} processes, now {self.dist.world_size}"
                    if state.world_size != self.dist.world_size else ""))

    def _restore_rng(self, state: TrainState) -> None:
        """Each rank's own generator when the world size is unchanged; otherwise rank 0
        continues the saved one and the others start fresh streams of their own."""
        ranks = state.rank_rng
        if not self.dist.enabled:
            torch.set_rng_state(state.rng)
            if state.cuda_rng and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state.cuda_rng)
        elif ranks and len(ranks) == self.dist.world_size:
            mine = ranks[self.dist.rank]
            torch.set_rng_state(mine["cpu"])
            if "cuda" in mine and self.device.type == "cuda":
                torch.cuda.set_rng_state(mine["cuda"], self.device)
        elif self.is_main:
            torch.set_rng_state(state.rng)
        else:
            torch.manual_seed(self.cfg.train.seed + RANK_SEED_STRIDE * self.dist.rank + state.progress.step)

    # -- the loop ----------------------------------------------------------------------
    def _write_log(self, record: Dict[str, Any]) -> None:
        try:
            with open(self.out / "log.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
        except OSError as exc:
            what, advice = write_failure(exc)
            raise UserError(f"{self.out / 'log.jsonl'}: {what} while appending to it; the checkpoints in "
                            f"{self.out} are intact: {advice}, then resume") from None
        if self.tensorboard is not None:
            self.tensorboard.write(record)

    def _next_batches(self, it: Iterator[List[int]]) -> List[List[int]]:
        """The index lists of the next update (``accumulate`` batches, crossing epochs)."""
        out: List[List[int]] = []
        self._batch_epochs = []
        empty = 0  # epochs in a row without a batch (weights so small that no pair was drawn)
        while len(out) < self.cfg.train.accumulate:
            try:
                out.append(next(it))
                self._batch_epochs.append(self.sampler.epoch)  # moves on only after the epoch's last batch
                empty = 0
            except StopIteration:
                if self.cfg.train.max_epochs and self.sampler.epoch >= self.cfg.train.max_epochs:
                    break
                empty += 1
                if empty > 100:
                    raise UserError(f"data.train: no training pair drawn in {empty} epochs in a row "
                                    f"(epoch {self.sampler.epoch}); raise the corpora's weights") from None
                it = iter(self.sampler)
                self._iter = it
        return out

    def train_step(self, batches: List[List[int]]) -> Dict[str, float]:
        """One optimiser update over ``batches`` (gradient accumulation), loss per target token."""
        tc = self.cfg.train
        lr = learning_rate(tc, self.step, self.sampler.epoch, self.progress.plateau_decays)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        epochs = self._batch_epochs if len(self._batch_epochs) == len(batches) else [self.sampler.epoch] * len(batches)
        collated = [collate(self.data.view(e), idx, self.device) for e, idx in zip(epochs, batches)]
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
        if not (math.isfinite(loss_value) and bool(torch.isfinite(norm))):
            self.optimizer.zero_grad(set_to_none=self.update_graphs is None)  # graphs keep .grad's addresses
            self.progress.nonfinite_total += 1
            self.nonfinite_run += 1
            return {"skipped": True, "loss": loss_value, "lr": lr, "ntokens": ntokens}
        self.nonfinite_run = 0
        self.optimizer.step()
        forget_tables(self.model)  # fused Adam changes the weights without their version counters
        self.optimizer.zero_grad(set_to_none=self.update_graphs is None)  # graphs keep .grad's addresses
        self.progress.step += 1
        if self.average is not None:
            self.average.update(self.progress.step)
        return {"loss": loss_value / ntokens, "nll": float(nll_total) / ntokens, "lr": lr, "ntokens": ntokens}

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

    def run(self) -> Dict[str, Any]:
        with StopSignals(self.log) as signals:
            try:
                return self._run(signals)
            except RuntimeError as exc:
                if not self.dist.enabled or isinstance(exc, UserError):
                    raise
                # A collective failed: a peer process died. Rank 0 saves what it has (the
                # weights and data position of the last whole update) without collectives.
                self._emergency_save()
                raise UserError(f"rank {self.dist.rank}: lost contact with the other processes at step "
                                f"{self.step} ({str(exc).splitlines()[0][:160]}); "
                                + ("saved a checkpoint, continue with --resume" if self.is_main
                                   else "rank 0 saves the checkpoint")) from None
            finally:
                if self._lock is not None:
                    self._lock.release()  # the directory may be trained again (a resume)

    def _emergency_save(self) -> None:
        if not self.is_main:
            return
        try:
            self._write_checkpoint(None, False, None, snapshot=self._consistent)
            self.log(f"saved ckpt-{self.step}.safetensors after losing the other processes")
        except Exception as exc:  # the previous checkpoint is intact (atomic writes)
            self.log(f"could not save after losing the other processes: {exc}")

    def _should_stop(self, signals: StopSignals, budget: Optional[float]) -> Optional[str]:
        """``"signal"``, ``"time_budget"`` or None; one all-reduce agrees on it over all ranks."""
        flags = [float(signals.received is not None),
                 float(budget is not None and self.progress.train_seconds >= budget)]
        if self.dist.enabled:
            flags = self.dist.all_reduce_sum(flags, self.device)
        if flags[0] > 0:
            return "signal"
        if flags[1] > 0:
            return "time_budget"
        return None

    def _wall_now(self) -> float:
        """Wall-clock seconds of this run over all its sittings, up to now."""
        started = getattr(self, "_sitting_start", None)
        return self.progress.wall_seconds + (time.perf_counter() - started if started is not None else 0.0)

    def _run(self, signals: StopSignals) -> Dict[str, Any]:
        tc = self.cfg.train
        self._sitting_start = time.perf_counter()
        self.model.train()
        budget = tc.max_minutes * 60 if tc.max_minutes else None
        save_every = tc.save_every if tc.save_every is not None else tc.validate_every
        window = {"loss": 0.0, "nll": 0.0, "tokens": 0, "seconds": 0.0, "steps": 0}
        last: Dict[str, Any] = {}
        validated_at = saved_at = self.step
        stop_reason = "max_steps"
        bar = tqdm(total=tc.max_steps, initial=self.step, disable=not (tc.progress and self.is_main) or None,
                   file=sys.stderr, dynamic_ncols=True, leave=False)
        self._iter = iter(self.sampler)
        self._consistent = self._snapshot()
        while self.step < tc.max_steps:
            stop = self._should_stop(signals, budget)
            if stop:
                stop_reason = stop
                break
            batches = self._next_batches(self._iter)
            if not batches:
                stop_reason = "max_epochs"
                break
            t0 = time.perf_counter()
            stats = self.train_step(batches)
            self.heap_trim.after_update()
            elapsed = time.perf_counter() - t0
            self.progress.train_seconds += elapsed
            self._consistent = self._snapshot()
            if stats.get("skipped"):
                self.log(f"step {self.step:>6}  non-finite loss or gradient: update skipped "
                         f"({self.nonfinite_run} in a row, {self.progress.nonfinite_total} in all)")
                if self.is_main:
                    self._write_log({"step": self.step, "skipped_nonfinite": self.progress.nonfinite_total,
                                     "nonfinite_in_a_row": self.nonfinite_run})
                if self.nonfinite_run >= tc.max_nonfinite:
                    self.save()  # the weights are still finite: keep the data position
                    raise UserError(f"{self.nonfinite_run} non-finite losses in a row at step {self.step} "
                                    f"(train.max_nonfinite); the last checkpoint, ckpt-{self.step}, has finite "
                                    f"weights: lower train.lr or check the data before resuming")
                continue
            window["loss"] += stats["loss"] * stats["ntokens"]
            window["nll"] += stats["nll"] * stats["ntokens"]
            window["tokens"] += stats["ntokens"]
            window["seconds"] += elapsed
            window["steps"] += 1
            bar.update(1)
            if self.step % tc.log_every == 0 or self.step == tc.max_steps:
                last = self._log_window(window, stats["lr"])
                bar.set_postfix(loss=f"{last['loss']:.3f}", lr=f"{last['lr']:.2e}",
                                tok_s=f"{last['tokens_per_s']:.0f}")
                window = {k: 0 for k in window}
            if self.has_dev and tc.validate_every and self.step % tc.validate_every == 0:
                stop_early = self._validate_and_save()
                validated_at = saved_at = self.step  # before the break: no second validation below
                if stop_early:
                    stop_reason = "early_stopping"
                    break
            elif save_every and self.step % save_every == 0:
                self.save()
                saved_at = self.step
        bar.close()
        if window["steps"]:
            last = self._log_window(window, learning_rate(tc, max(self.step - 1, 0), self.sampler.epoch,
                                                          self.progress.plateau_decays))
        if stop_reason == "signal":
            self.stop_signal = signals.name or "signal"
            self.log(f"{self.stop_signal}: stopping at step {self.step}")
            final = self.step != saved_at or not (self.out / STATE_FILE).exists()
            if self.dist.broadcast_object(final):
                self.save()  # no validation: a stopping process has seconds, not minutes
        else:
            final = (self.step != validated_at if self.has_dev else self.step != saved_at) \
                or not (self.out / STATE_FILE).exists()
            if self.dist.broadcast_object(final):  # rank 0's file system decides
                if self.has_dev:
                    self._validate_and_save()
                else:
                    self.save()
        p = self.progress
        summary: Dict[str, Any] = {
            "steps": self.step, "stop_reason": stop_reason, "train_seconds": round(p.train_seconds, 1),
            "wall_seconds": round(self._wall_now(), 1), "best_dev_bleu": p.best_bleu,
            "best_metric": tc.best_metric, "best_value": p.best_value, "best_step": p.best_step,
            **{k: last[k] for k in ("loss", "tokens_per_s") if k in last}}
        if self.progress.nonfinite_total:
            summary["skipped_nonfinite"] = self.progress.nonfinite_total
        self.log("training finished: " + json.dumps(summary))
        return summary

    def _log_window(self, window: Dict[str, float], lr: float) -> Dict[str, Any]:
        tokens = max(window["tokens"], 1)
        record = {
            "step": self.step,
            "epoch": self.sampler.epoch,
            "loss": window["loss"] / tokens,
            "nll": window["nll"] / tokens,
            "ppl": math.exp(min(window["nll"] / tokens, 50)),
            "lr": lr,
            "tokens_per_s": window["tokens"] / max(window["seconds"], 1e-9),
            "train_seconds": round(self.progress.train_seconds, 2),
        }
        if self.progress.nonfinite_total:
            record["skipped_nonfinite"] = self.progress.nonfinite_total
        if not self.is_main:
            return record
        self._write_log(record)
        if not self.cfg.train.progress or not sys.stderr.isatty():
            self.log(f"step {record['step']:>6}  loss {record['loss']:.3f}  ppl {record['ppl']:.1f}  "
                     f"lr {record['lr']:.2e}  {record['tokens_per_s']:.0f} tok/s")
        return record

    def _validate_and_save(self) -> bool:
        """Validate (rank 0 only), checkpoint, and say whether early stopping should end
        training; every rank gets rank 0's verdict."""
        metrics: Dict[str, float] = {}
        bleu: Optional[float] = None
        improved = False
        p = self.progress
        if self.is_main:
            with self._averaged():
                metrics = self.validate()
            bleu = metrics["dev_bleu"]
            value = metrics[BEST_METRICS[self.cfg.train.best_metric]]
            improved = improves(self.cfg.train.best_metric, value, p.best_value)
            if improved:
                p.best_value, p.best_bleu, p.best_step = value, bleu, self.step
                p.bad_validations = p.plateau_bad = 0
            else:
                p.bad_validations += 1
                self._note_plateau()
        if self.dist.enabled:
            (p.best_value, p.best_bleu, p.best_step, p.bad_validations, p.plateau_bad, p.plateau_decays, bleu,
             improved) = self.dist.broadcast_object(
                (p.best_value, p.best_bleu, p.best_step, p.bad_validations, p.plateau_bad, p.plateau_decays, bleu,
                 improved))
        self.save(dev_bleu=bleu, improved=improved)
        if self.is_main:
            record = {"step": self.step, **metrics, "best_dev_bleu": p.best_bleu,
                      f"best_dev_{self.cfg.train.best_metric}": p.best_value,
                      "train_seconds": round(p.train_seconds, 2), "wall_seconds": round(self._wall_now(), 2)}
            if self.cfg.train.schedule == "plateau":
                record["plateau_decays"] = p.plateau_decays
            self._write_log(record)
            self.log(f"step {self.step:>6}  dev loss {metrics['dev_loss']:.3f}  BLEU {bleu:.2f}  "
                     f"chrF {metrics['dev_chrf']:.2f}" + ("  (best)" if improved else ""))
        patience = self.cfg.train.patience
        return patience is not None and self.progress.bad_validations >= patience

    def _note_plateau(self) -> None:
        """One more validation without improvement of ``train.best_metric``: under the
        ``plateau`` schedule, the ``plateau_patience``-th in a row since the last
        improvement or decay decays the rate."""
        tc = self.cfg.train
        if tc.schedule != "plateau":
            return
        self.progress.plateau_bad += 1
        if self.progress.plateau_bad >= tc.plateau_patience:
            self.progress.plateau_decays += 1
            self.progress.plateau_bad = 0
            self.log(f"step {self.step:>6}  dev {tc.best_metric} has not improved for {tc.plateau_patience} "
                     f"validations: learning rate x{tc.decay_rate:g} (decay {self.progress.plateau_decays})")

