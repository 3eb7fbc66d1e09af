"""The training state that ``--resume`` restores: a typed record, saved field by field.

`Progress` holds the run's counters (its update, time spent, best checkpoint, plateau and
early-stopping counts); `TrainState` adds what a resumed run needs besides the weights: the
optimiser, the sampler's position, the random generators, and facts the run must keep
(its processes, its corpus, its precision and execution plan). Both are dataclasses so that a field added or
renamed is a change a reader sees, and `TrainState.from_dict` is the one place that reads
an older file: each format version's missing fields get the value that reproduces how that
version behaved.

On disk (``OUT/train_state.pt``) the state is one flat dict of tensors and plain values,
written by `torch.save` and read with ``weights_only=True``: nothing in the file is executed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional

import torch

from rnmt.errors import UserError

# 1: every file written before the version field (2026-11); 2: adds "version"; 3: adds
# "train_weights" (an older rnmt would resume such a run from its average, so it must refuse).
# The optional "plan" (rnmt.plan) came within version 3: an older rnmt ignores it and
# resolves its own choices, which changes no weight it reads.
STATE_VERSION = 3


@dataclass
class Progress:
    """Where a run is and how it has gone; the trainer updates it, `TrainState` saves it."""

    step: int = 0
    train_seconds: float = 0.0  # in training updates, over every sitting
    wall_seconds: float = 0.0  # training, validation and checkpoints, over every sitting
    best_value: Optional[float] = None  # train.best_metric at the best checkpoint
    best_bleu: Optional[float] = None  # dev BLEU at the best checkpoint
    best_step: Optional[int] = None  # the update of the best checkpoint
    bad_validations: int = 0  # in a row without a new best (train.patience)
    # The plateau schedule: decays so far, and validations without improvement since the
    # last improvement or decay (train.plateau_patience of them trigger the next decay).
    plateau_decays: int = 0
    plateau_bad: int = 0
    nonfinite_total: int = 0  # updates skipped for a non-finite loss or gradient
    checkpoints: List[str] = field(default_factory=list)  # the ckpt-*.safetensors kept, oldest first


@dataclass
class TrainState:
    """Everything ``--resume`` restores besides the weights (they are in ``checkpoint``)."""

    progress: Progress
    checkpoint: str  # the ckpt-<step>.safetensors whose weights match this state
    optimizer: Dict[str, Any]
    sampler: Dict[str, Any]  # TokenBatchSampler.state_dict(): epoch and position in its order
    rng: torch.Tensor  # rank 0's CPU generator
    cuda_rng: List[torch.Tensor] = field(default_factory=list)
    rank_rng: Optional[List[Dict[str, torch.Tensor]]] = None  # every rank's generators (torchrun)
    world_size: int = 1
    corpus_key: Optional[str] = None  # the encoded corpus's cache name: a changed corpus is noticed
    # The precision the run started in ("bf16" or "fp32"), which it keeps; None in files
    # written before train.amp could choose (the set-up decides: rnmt.training.setup).
    amp: Optional[str] = None
    # The run's execution plan (rnmt.plan.ExecutionPlan.to_dict()), which --resume reuses;
    # None in files written before plans.
    plan: Optional[Dict[str, Any]] = None
    # With train.ema_decay the checkpoint holds the weights' average; these are the weights
    # being trained (rnmt.training.weight_average). None: the checkpoint's weights are they.
    train_weights: Optional[Dict[str, torch.Tensor]] = None
    version: int = STATE_VERSION

    def to_dict(self) -> Dict[str, Any]:
        """The flat dict written to disk (the progress fields beside the others)."""
        out = asdict(self.progress)
        for f in fields(self):
            optional = f.name in ("rank_rng", "train_weights", "plan")
            if f.name == "progress" or (optional and getattr(self, f.name) is None):
                continue
            out[f.name] = getattr(self, f.name)
        return out

    @classmethod
    def from_dict(cls, raw: Dict[str, Any], path: str) -> TrainState:
        """Read a saved state of any version up to this one; ``path`` names it in errors."""
        version = int(raw.get("version", 1))
        if version > STATE_VERSION:
            raise UserError(f"{path}: training state version {version} is newer than this rnmt reads "
                            f"({STATE_VERSION}); resume it with the rnmt version that wrote it")
        missing = [k for k in ("step", "checkpoint", "optimizer", "sampler", "rng", "train_seconds",
                               "best_bleu", "bad_validations", "checkpoints") if k not in raw]
        if missing:
            raise UserError(f"{path}: not an rnmt training state (no '{missing[0]}')")
        # Version 1 files grew fields over time; each default is how the code before it behaved.
        train_seconds = float(raw["train_seconds"])
        progress = Progress(
            step=int(raw["step"]),
            train_seconds=train_seconds,
            wall_seconds=float(raw.get("wall_seconds", train_seconds)),  # before wall-clock was kept
            best_value=raw.get("best_value", raw["best_bleu"]),  # before train.best_metric: BLEU
            best_bleu=raw["best_bleu"],
            best_step=raw.get("best_step"),
            bad_validations=int(raw["bad_validations"]),
            plateau_decays=int(raw.get("plateau_decays", 0)),
            plateau_bad=int(raw.get("plateau_bad", 0)),
            nonfinite_total=int(raw.get("nonfinite_total", 0)),
            checkpoints=list(raw["checkpoints"]),
        )
        return cls(progress=progress, checkpoint=str(raw["checkpoint"]), optimizer=raw["optimizer"],
                   sampler=raw["sampler"], rng=raw["rng"], cuda_rng=list(raw.get("cuda_rng", [])),
                   rank_rng=raw.get("rank_rng"), world_size=int(raw.get("world_size", 1)),
                   corpus_key=raw.get("corpus_key"), amp=raw.get("amp"), plan=raw.get("plan"),
                   train_weights=raw.get("train_weights"),
                   version=STATE_VERSION)
