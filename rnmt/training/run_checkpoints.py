"""A run's checkpoints: write, rotate, best, emergency save, and restore for ``--resume``.

The file formats and atomic writes are `rnmt.training.checkpoint`; this module decides
what a run writes and when it may delete, as functions of the `Trainer` they are given
(the split fairseq's ``checkpoint_utils`` makes): they read the run's current model,
optimiser, sampler and progress at the call, so a caller that swaps one of them (a
benchmark) is saved as it is.

Output directory layout:

    OUT/config.yaml          the resolved config
    OUT/config.source.yaml   the config file as `rnmt.train` last read it, before --set (what
                             --resume compares an edited file with: rnmt.training.resume)
    OUT/spm*.model           the sentencepiece model(s)
    OUT/ckpt-<step>.safetensors   the last ``train.keep_last`` checkpoints, and those at the
                             updates of ``train.keep_steps``
    OUT/best.safetensors     the checkpoint with the best dev metric, or the newest one when
                             there is no dev set (what `translate` and `serve` load)
    OUT/train_state.pt       optimiser, step, data position and random state (for --resume;
                             rnmt.training.state.TrainState); with train.ema_decay also
                             the training weights, while the checkpoints hold their average
                             (rnmt.training.weight_average)
    OUT/log.jsonl            one JSON object per logging interval and per validation
    OUT/tensorboard/         the same as TensorBoard events (train.tensorboard: true)

Non-finite weights are never written; old checkpoints are deleted only after the state
that no longer needs them is on disk.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager, Dict, List, Optional

import torch
from torch import Tensor

from rnmt.errors import UserError
from rnmt.io.checkpoint_files import load_state_into
from rnmt.models.loading import read_checked
from rnmt.training.checkpoint import load_train_state, save_model, save_train_state
from rnmt.training.resume import check_corpus
from rnmt.training.setup import RANK_SEED_STRIDE, STATE_FILE
from rnmt.training.state import TrainState
from rnmt.training.weight_average import WeightAverage, load_weights

if TYPE_CHECKING:
    from rnmt.training.trainer import Trainer


def rng_state(device: torch.device) -> Dict[str, Any]:
    """This process's generators (what every rank contributes to a checkpoint under torchrun)."""
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def snapshot(trainer: Trainer) -> Dict[str, Any]:
    """The data position and random state that go with the weights as they are now."""
    return {"sampler": trainer.sampler.state_dict(), "rng": torch.get_rng_state()}


def averaged(average: Optional[WeightAverage]) -> ContextManager[Optional[Dict[str, Tensor]]]:
    """The model holds the weights' average inside the block (train.ema_decay), which
    receives a copy of the training weights (None without an average)."""
    return average.applied() if average is not None else contextlib.nullcontext()


def check_finite(trainer: Trainer) -> None:
    bad = [n for n, p in trainer.model.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise UserError(f"step {trainer.step}: weight '{bad[0]}' is not finite ({len(bad)} tensors); "
                        f"not writing it over a good checkpoint (the last one is in {trainer.out})")


def write_checkpoint(trainer: Trainer, dev_bleu: Optional[float], improved: bool, rank_rng: Optional[list],
                     position: Optional[Dict[str, Any]] = None) -> None:
    """Write ckpt-<step>, best (when ``improved``, or always without a dev set) and the
    training state, then rotate; ``position`` is a `snapshot` (default: taken now)."""
    check_finite(trainer)
    position = position or snapshot(trainer)
    meta = {"step": trainer.step, "epoch": position["sampler"]["epoch"], "dev_bleu": dev_bleu}
    if trainer.init is not None:
        meta["init_from"] = trainer.init.provenance
    name = f"ckpt-{trainer.step}.safetensors"
    with averaged(trainer.average) as train_weights:  # the checkpoints hold the model that is used
        if trainer.average is not None:
            check_finite(trainer)  # the average too (the training weights were checked above)
        _save_weights(trainer, name, improved, meta)
    progress = trainer.progress
    if name not in progress.checkpoints:
        progress.checkpoints.append(name)
    state = TrainState(
        progress=replace(progress, wall_seconds=trainer.wall_seconds(), checkpoints=list(progress.checkpoints)),
        checkpoint=name, optimizer=trainer.optimizer.state_dict(), sampler=position["sampler"],
        rng=position["rng"], cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        rank_rng=rank_rng, world_size=trainer.dist.world_size, corpus_key=trainer.data.key,
        amp="bf16" if trainer.amp_dtype is not None else "fp32", plan=trainer.plan.to_dict() if trainer.plan else None,
        train_weights=train_weights)
    save_train_state(trainer.out / STATE_FILE, state.to_dict())
    rotate(trainer.out, progress.checkpoints, trainer.cfg.train.keep_last, trainer.cfg.train.keep_steps)


def _save_weights(trainer: Trainer, name: str, improved: bool, meta: Dict[str, Any]) -> None:
    vocabs = {"src": trainer.src_vocab.to_bytes(), "tgt": trainer.tgt_vocab.to_bytes()}
    save_model(trainer.out / name, trainer.model, trainer.cfg, vocabs, meta)
    # Without a dev set there is no "best": best.safetensors follows the newest checkpoint,
    # so a run directory always loads the newest weights.
    if improved or not trainer.has_dev or not (trainer.out / "best.safetensors").exists():
        save_model(trainer.out / "best.safetensors", trainer.model, trainer.cfg, vocabs, meta)


def rotate(out: Path, checkpoints: List[str], keep_last: int, keep_steps: List[int]) -> None:
    """Drop the oldest of ``checkpoints`` (in place) beyond ``keep_last``; the files of
    those at ``keep_steps`` stay on disk (they leave the rotation, not the directory)."""
    kept = {f"ckpt-{step}.safetensors" for step in keep_steps}
    while len(checkpoints) > max(1, keep_last):
        old = checkpoints.pop(0)
        if old not in kept:
            (out / old).unlink(missing_ok=True)


def emergency_save(trainer: Trainer, position: Optional[Dict[str, Any]]) -> None:
    """Rank 0, a peer process having died mid-update: save the weights of the last whole
    update with its data position (``position``), without collectives."""
    if not trainer.is_main:
        return
    try:
        write_checkpoint(trainer, None, False, None, position=position)
        trainer.log(f"saved ckpt-{trainer.step}.safetensors after losing the other processes")
    except Exception as exc:  # the previous checkpoint is intact (atomic writes)
        trainer.log(f"could not save after losing the other processes: {exc}")


def restore(trainer: Trainer, corpus_changed_ok: bool, train_names: str) -> None:
    """Load ``OUT/train_state.pt`` and its checkpoint into the run (``--resume``)."""
    path = trainer.out / STATE_FILE
    state = TrainState.from_dict(load_train_state(path), str(path))
    mf, _, _ = read_checked(trainer.out / state.checkpoint)
    load_state_into(trainer.model, mf.state, mf.path)
    if trainer.average is not None:
        trainer.average.restart_from_model()  # the checkpoint holds the average, when there was one
    if state.train_weights is not None:
        load_weights(dict(trainer.model.named_parameters()), state.train_weights, str(path))
        if trainer.average is None:
            trainer.log("the run averaged its weights (train.ema_decay), which is now off: training goes "
                        "on from its training weights")
    trainer.optimizer.load_state_dict(state.optimizer)
    changed = check_corpus(state.corpus_key, trainer.data.key, train_names, corpus_changed_ok)
    sampler = trainer.sampler
    sampler.load_state_dict(state.sampler)
    if changed:
        # The saved position indexes the old corpus: continue with the next epoch's order.
        sampler.set_epoch(sampler.epoch + 1)
        trainer.log(f"the training corpus changed since step {state.progress.step}: continuing at epoch "
                    f"{sampler.epoch} of the new corpus")
    restore_rng(trainer, state)
    trainer.progress = state.progress
    trainer.log(f"resumed from step {trainer.step} (epoch {sampler.epoch}, batch {sampler.position})"
                + (f"; the run had {state.world_size} processes, now {trainer.dist.world_size}"
                   if state.world_size != trainer.dist.world_size else ""))


def restore_rng(trainer: Trainer, state: TrainState) -> None:
    """Each rank's own generator when the world size is unchanged; otherwise rank 0
    continues the saved one and the others start fresh streams of their own."""
    dist, ranks = trainer.dist, state.rank_rng
    if not dist.enabled:
        torch.set_rng_state(state.rng)
        if state.cuda_rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state.cuda_rng)
    elif ranks and len(ranks) == dist.world_size:
        mine = ranks[dist.rank]
        torch.set_rng_state(mine["cpu"])
        if "cuda" in mine and trainer.device.type == "cuda":
            torch.cuda.set_rng_state(mine["cuda"], trainer.device)
    elif dist.is_main:
        torch.set_rng_state(state.rng)
    else:
        torch.manual_seed(trainer.cfg.train.seed + RANK_SEED_STRIDE * dist.rank + state.progress.step)
