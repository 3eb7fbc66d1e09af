"""An exponential moving average of the weights (Polyak averaging), the model that is used.

With ``train.ema_decay: d`` each update also moves a copy of the weights towards the new
weights, ``avg <- avg + (1 - d_t) (w - avg)`` with ``d_t = min(d, (1 + t) / (10 + t))``
after update t: in the first updates the average follows the weights closely instead of
holding on to their random start (the warm-up of TensorFlow's ExponentialMovingAverage), and
from update ``(10 d - 1) / (1 - d)`` on it averages over about ``1 / (1 - d)`` updates.

Validation, ``ckpt-*.safetensors`` and ``best.safetensors`` hold the average (what
``translate``, ``serve`` and fine-tuning load); the training weights go into
``OUT/train_state.pt``, so ``--resume`` continues both exactly. At a high learning rate a
young model's consecutive checkpoints differ by several BLEU (docs/performance.md, "Time to
quality"); the average removes much of that noise for a lag of about ``1 / (1 - d)``
updates. `rnmt average` is the offline counterpart: the mean of saved checkpoints.
"""

from __future__ import annotations

import contextlib
from typing import Dict, Iterator, List

import torch
from torch import Tensor, nn


def effective_decay(decay: float, step: int) -> float:
    """The decay applied after update ``step`` (1 for the first update)."""
    return min(decay, (1.0 + step) / (10.0 + step))


class WeightAverage:
    """The running average of ``model``'s parameters (each shared tensor once)."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.named: Dict[str, nn.Parameter] = dict(model.named_parameters())  # shared ones once
        self.average: List[Tensor] = [p.detach().clone() for p in self.named.values()]

    @torch.no_grad()
    def update(self, step: int) -> None:
        """Move the average towards the current weights after update ``step``."""
        weight = 1.0 - effective_decay(self.decay, step)
        torch._foreach_lerp_(self.average, [p.detach() for p in self.named.values()], weight)

    @torch.no_grad()
    def restart_from_model(self) -> None:
        """The average becomes the model's current weights (a resumed run's checkpoint)."""
        for avg, p in zip(self.average, self.named.values()):
            avg.copy_(p.detach())

    def training_weights(self) -> Dict[str, Tensor]:
        """A copy of the weights being trained (what a resumed run continues from)."""
        return {name: p.detach().clone() for name, p in self.named.items()}

    @contextlib.contextmanager
    def applied(self) -> Iterator[Dict[str, Tensor]]:
        """The model holds the average inside the block and its training weights after it.
        The block receives the copy of the training weights it restores (what
        ``train_state.pt`` keeps), so a checkpoint copies them once.

        The weights are copied, not swapped, so every tensor keeps its storage (what DDP's
        gradient buckets and the decoder's per-token tables are tied to) and a changed
        version counter tells those tables to rebuild.
        """
        with torch.no_grad():
            saved = self.training_weights()
            for p, avg in zip(self.named.values(), self.average):
                p.copy_(avg)
        try:
            yield saved
        finally:
            with torch.no_grad():
                for p, w in zip(self.named.values(), saved.values()):
                    p.copy_(w)


@torch.no_grad()
def load_weights(named: Dict[str, nn.Parameter], weights: Dict[str, Tensor], where: str) -> None:
    """Copy ``weights`` into the parameters ``named``, which must match them name for name."""
    from rnmt.errors import UserError
    from rnmt.io.checkpoint_files import weights_mismatch

    problem = weights_mismatch({k: p.shape for k, p in named.items()}, weights)
    if problem:
        raise UserError(f"{where}: the saved training weights do not fit the model ({problem})")
    for name, p in named.items():
        p.copy_(weights[name])
