"""Fine-tuning: a new run that starts from a trained model's weights and vocabularies.

``rnmt train CONFIG --out DIR --init-from RUN_OR_CHECKPOINT`` builds the model of CONFIG,
loads the checkpoint's weights into it and trains with a fresh optimiser and schedule from
step 0, so every ``train.*`` setting (learning rate, schedule, steps, patience) is the new
run's own, as are the data. The checkpoint's vocabularies are kept (its embeddings index
them), so ``data.vocab.*`` is not read. The architecture must be the checkpoint's: every
``model.*`` key but the dropout rates, which only act in training, must agree.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Dict, Optional

from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import ModelFile
from rnmt.models.loading import read_checked
from rnmt.models.registry import resolved_options

# model.* keys a fine-tuning run may change: they change training, not the network.
TRAINING_ONLY = ("dropout", "rnn_dropout")


@dataclasses.dataclass
class InitCheckpoint:
    """A checkpoint read for fine-tuning, with its vocabularies."""

    file: ModelFile
    src_vocab: Any
    tgt_vocab: Any

    @property
    def provenance(self) -> Dict[str, Any]:
        """What the new run's checkpoints record about where they started."""
        return {"path": str(self.file.path), "step": self.file.meta.get("step")}


def read_init_checkpoint(path: str | Path) -> InitCheckpoint:
    """Read and check the checkpoint (a one-line error for a missing, foreign or corrupt one)."""
    mf, src_vocab, tgt_vocab = read_checked(path)
    return InitCheckpoint(mf, src_vocab, tgt_vocab)


def _keys(cfg: ModelConfig) -> Dict[str, Any]:
    """``model.*`` with each option of ``model.options`` as ``options.KEY``, the
    architecture's defaults filled in."""
    keys = dataclasses.asdict(cfg)
    del keys["options"]
    keys.update({f"options.{k}": v for k, v in resolved_options(cfg).items()})
    return keys


def first_difference(saved: ModelConfig, wanted: ModelConfig) -> Optional[str]:
    """The first architecture key on which two model configs differ, as ``model.KEY``
    (``model.options.KEY``) with both values, or None."""
    a, b = _keys(saved), _keys(wanted)
    for key in [*a, *(k for k in b if k not in a)]:
        if key not in TRAINING_ONLY and a.get(key) != b.get(key):
            return f"model.{key} is {a.get(key)!r} in the checkpoint but {b.get(key)!r} in the config"
    return None


def check_architecture(init: InitCheckpoint, wanted: ModelConfig) -> None:
    difference = first_difference(init.file.config.model, wanted)
    if difference:
        raise UserError(f"--init-from {init.file.path}: {difference}; fine-tuning keeps the checkpoint's "
                        f"architecture")
