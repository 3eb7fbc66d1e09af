"""Optional TensorBoard event files (``train.tensorboard: true``, the ``tensorboard`` extra).

Every record the trainer writes to ``log.jsonl`` is also written as scalars under
``OUT/tensorboard/``, at the record's update step: training loss, learning rate and
tokens/s per logging interval, dev loss, BLEU and chrF per validation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from rnmt.errors import UserError

# log.jsonl key -> TensorBoard tag
SCALARS = {
    "loss": "train/loss", "nll": "train/nll", "ppl": "train/ppl", "lr": "train/lr",
    "tokens_per_s": "train/tokens_per_s",
    "dev_loss": "dev/loss", "dev_ppl": "dev/ppl", "dev_bleu": "dev/bleu", "dev_chrf": "dev/chrf",
}


class TensorBoardLog:
    def __init__(self, directory: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # torch imports tensorboard lazily, here
            raise UserError("train.tensorboard is true but the tensorboard package is not installed "
                            "(pip install 'rnmt[tensorboard]')") from None
        self.writer = SummaryWriter(log_dir=str(directory))

    def write(self, record: Dict[str, Any]) -> None:
        for key, tag in SCALARS.items():
            if record.get(key) is not None:
                self.writer.add_scalar(tag, record[key], record["step"])
        self.writer.flush()  # a run stopped at any point leaves readable curves

    def close(self) -> None:
        self.writer.close()
