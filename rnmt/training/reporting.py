"""What a training run reports: ``log.jsonl``, TensorBoard, the terminal and its progress bar.

`RunReport` is the one place records go: every record is appended to ``OUT/log.jsonl`` and,
with ``train.tensorboard``, written as TensorBoard scalars (`rnmt.training.tensorboard`);
a line for the terminal goes to the run's ``log`` callable (rank 0 prints, the others are
quiet). `LossWindow` sums the updates of one logging interval (``train.log_every``). Only
rank 0 writes files; the loop calls the same methods on every rank.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from tqdm import tqdm

from rnmt.config import TrainConfig
from rnmt.errors import UserError, write_failure
from rnmt.training.state import Progress


@dataclass
class LossWindow:
    """Sums over the updates since the last logged interval."""

    loss: float = 0.0  # loss x target tokens
    nll: float = 0.0
    tokens: int = 0
    seconds: float = 0.0
    steps: int = 0

    def add(self, stats: Dict[str, Any], seconds: float) -> None:
        self.loss += stats["loss"] * stats["ntokens"]
        self.nll += stats["nll"] * stats["ntokens"]
        self.tokens += stats["ntokens"]
        self.seconds += seconds
        self.steps += 1


class RunReport:
    """Writes the run's records (rank 0) and shows its progress (see the module's docstring)."""

    def __init__(self, out: Path, tc: TrainConfig, is_main: bool, log: Callable[..., None]) -> None:
        self.out, self.tc, self.is_main, self.log = out, tc, is_main, log
        self.tensorboard = None
        if tc.tensorboard and is_main:
            from rnmt.training.tensorboard import TensorBoardLog

            self.tensorboard = TensorBoardLog(out / "tensorboard")
        self.bar: Optional[tqdm] = None

    def write(self, record: Dict[str, Any]) -> None:
        """Append ``record`` to log.jsonl (and TensorBoard); a refused write is a one-line error."""
        path = self.out / "log.jsonl"
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
        except OSError as exc:
            what, advice = write_failure(exc)
            raise UserError(f"{path}: {what} while appending to it; the checkpoints in "
                            f"{self.out} are intact: {advice}, then resume") from None
        if self.tensorboard is not None:
            self.tensorboard.write(record)

    # -- the progress bar ------------------------------------------------------------
    def open_bar(self, step: int) -> None:
        self.bar = tqdm(total=self.tc.max_steps, initial=step, disable=not (self.tc.progress and self.is_main) or None,
                        file=sys.stderr, dynamic_ncols=True, leave=False)

    def updated(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    # -- the records -----------------------------------------------------------------
    def interval(self, window: LossWindow, step: int, epoch: int, lr: float, progress: Progress) -> Dict[str, Any]:
        """The record of a logging interval (written and shown on rank 0; returned on every rank)."""
        tokens = max(window.tokens, 1)
        record = {
            "step": step,
            "epoch": epoch,
            "loss": window.loss / tokens,
            "nll": window.nll / tokens,
            "ppl": math.exp(min(window.nll / tokens, 50)),
            "lr": lr,
            "tokens_per_s": window.tokens / max(window.seconds, 1e-9),
            "train_seconds": round(progress.train_seconds, 2),
        }
        if progress.nonfinite_total:
            record["skipped_nonfinite"] = progress.nonfinite_total
        if not self.is_main:
            return record
        self.write(record)
        if not self.tc.progress or not sys.stderr.isatty():
            self.log(f"step {record['step']:>6}  loss {record['loss']:.3f}  ppl {record['ppl']:.1f}  "
                     f"lr {record['lr']:.2e}  {record['tokens_per_s']:.0f} tok/s")
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}",
                                 tok_s=f"{record['tokens_per_s']:.0f}")
        return record

    def skipped(self, step: int, in_a_row: int, progress: Progress) -> None:
        """An update skipped for a non-finite loss or gradient."""
        self.log(f"step {step:>6}  non-finite loss or gradient: update skipped "
                 f"({in_a_row} in a row, {progress.nonfinite_total} in all)")
        if self.is_main:
            self.write({"step": step, "skipped_nonfinite": progress.nonfinite_total, "nonfinite_in_a_row": in_a_row})

    def validation(self, metrics: Dict[str, float], progress: Progress, improved: bool, wall_seconds: float) -> None:
        """A validation's record and line (rank 0)."""
        if not self.is_main:
            return
        best = self.tc.best_metric
        record = {"step": progress.step, **metrics, "best_dev_bleu": progress.best_bleu,
                  f"best_dev_{best}": progress.best_value,
                  "train_seconds": round(progress.train_seconds, 2), "wall_seconds": round(wall_seconds, 2)}
        if self.tc.schedule == "plateau":
            record["plateau_decays"] = progress.plateau_decays
        self.write(record)
        self.log(f"step {progress.step:>6}  dev loss {metrics['dev_loss']:.3f}  BLEU {metrics['dev_bleu']:.2f}  "
                 f"chrF {metrics['dev_chrf']:.2f}" + ("  (best)" if improved else ""))
