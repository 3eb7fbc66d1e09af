"""Learning-rate schedules as pure functions of the update step (and epoch).

Being stateless, a schedule resumes exactly: the trainer only has to restore the step.
"""

from __future__ import annotations

import math
import typing

from rnmt.config import Schedule, TrainConfig
from rnmt.errors import UserError

SCHEDULES = typing.get_args(Schedule)  # the config loader accepts exactly these names


def rnmt_plus(t: int, lr0: float, n: int, p: int, s: int, e: int) -> float:
    """DTMT eq. 17 (the RNMT+ schedule of Chen et al. 2018), t the 0-based update step:

        lr(t) = lr0 * min(1 + t (n - 1) / (n p),  n,  n (2n)^((s - n t) / (e - s)))

    With n = 1 there is no warm-up and the plateau is lr0; the warm-up reaches the plateau
    at t = n p / (n - 1) and the decay starts at t = s / n (SPEC section 1).
    """
    warm = 1.0 + t * (n - 1) / (n * p) if p > 0 else float(n)
    decay = n * (2 * n) ** ((s - n * t) / (e - s))
    return lr0 * min(warm, float(n), decay)


def learning_rate(cfg: TrainConfig, step: int, epoch: int = 0, plateau_decays: int = 0) -> float:
    """The learning rate for update ``step`` (0-based) in ``epoch`` (0-based).

    ``plateau_decays``: how often the dev metric has plateaued so far (the trainer counts
    it and keeps it in the training state); only the ``plateau`` schedule reads it.
    """
    lr, warm = cfg.lr, cfg.warmup_steps
    if cfg.schedule == "constant":
        value = lr
    elif cfg.schedule == "warmup_decay":
        # Linear warm-up, a plateau, then exponential decay by decay_rate every decay_steps.
        value = lr * min(1.0, (step + 1) / warm) if warm > 0 else lr
        if step >= cfg.decay_start:
            value *= cfg.decay_rate ** ((step - cfg.decay_start) / cfg.decay_steps)
    elif cfg.schedule == "inverse_sqrt":
        # Vaswani et al. (2017): linear warm-up, then proportional to step^-0.5.
        s = step + 1
        value = lr * min(s / max(warm, 1), math.sqrt(max(warm, 1) / s))
    elif cfg.schedule == "rnmt_plus":
        value = rnmt_plus(step, lr, cfg.replicas or 1, warm, cfg.decay_start, cfg.decay_end)
    elif cfg.schedule == "epoch_halving":
        # ATR / Cseq2seq practice: halve the rate after every epoch; Luong et al. (2015) start
        # halving after the 5th (8th with dropout). Epochs count from 0.
        value = lr * 0.5 ** max(0, epoch - cfg.halve_after_epoch + 1)
    elif cfg.schedule == "plateau":
        # Linear warm-up, then decay_rate once per plateau of the dev metric
        # (train.plateau_patience validations without improvement): no update count fixed in
        # advance, so a run of any length anneals when it stops learning, not at a set step.
        value = lr * min(1.0, (step + 1) / warm) if warm > 0 else lr
        value *= cfg.decay_rate ** plateau_decays
    else:
        raise UserError(f"unknown train.schedule '{cfg.schedule}'; choose one of {', '.join(SCHEDULES)}")
    return max(value, cfg.min_lr)
