"""Training curves from runs' ``log.jsonl``: loss and dev BLEU against updates and against
training time, one line per run, so that architectures can be compared at equal time.

Training records carry ``loss`` and ``train_seconds``; validation records ``dev_bleu`` (and,
from this version on, ``train_seconds``; older logs take the time of the last training
record at or before the validation's step). A resumed run repeats the steps after its
checkpoint; the later record of a step wins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from rnmt.errors import UserError


@dataclass
class Curves:
    name: str
    steps: List[int] = field(default_factory=list)  # training records
    minutes: List[float] = field(default_factory=list)
    loss: List[float] = field(default_factory=list)
    dev_steps: List[int] = field(default_factory=list)  # validation records
    dev_minutes: List[float] = field(default_factory=list)
    dev_bleu: List[float] = field(default_factory=list)


def log_path(run: str | Path) -> Path:
    """A run directory's ``log.jsonl``, or the log file itself."""
    path = Path(run)
    path = path / "log.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise UserError(f"{path}: no such training log (expected a run directory or its log.jsonl)")
    return path


def read_curves(run: str | Path, name: Optional[str] = None) -> Curves:
    path = log_path(run)
    train: Dict[int, dict] = {}
    dev: Dict[int, dict] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                step = int(rec["step"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise UserError(f"{path}:{lineno}: not a training log record") from None
            if "loss" in rec and "train_seconds" in rec:
                train[step] = rec
            if rec.get("dev_bleu") is not None:
                dev[step] = rec
    label = name or (path.parent.name if path.name == "log.jsonl" else path.stem)
    curves = Curves(label)
    for step in sorted(train):
        curves.steps.append(step)
        curves.minutes.append(float(train[step]["train_seconds"]) / 60)
        curves.loss.append(float(train[step]["loss"]))
    for step in sorted(dev):
        seconds = dev[step].get("train_seconds")
        if seconds is None:  # an older log: the time of the last training record before it
            earlier = [s for s in curves.steps if s <= step]
            seconds = float(train[earlier[-1]]["train_seconds"]) if earlier else 0.0
        curves.dev_steps.append(step)
        curves.dev_minutes.append(float(seconds) / 60)
        curves.dev_bleu.append(float(dev[step]["dev_bleu"]))
    if not curves.steps and not curves.dev_steps:
        raise UserError(f"{path}: no training or validation records")
    return curves


def curves_figure(runs: Sequence[Curves], title: Optional[str] = None):
    """A 2 x 2 figure: training loss (top) and dev BLEU (bottom) against updates (left)
    and training minutes (right), one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharey="row")
    for k, c in enumerate(runs):
        colour = f"C{k % 10}"
        for col, (x, dev_x) in enumerate(((c.steps, c.dev_steps), (c.minutes, c.dev_minutes))):
            axes[0, col].plot(x, c.loss, color=colour, label=c.name, linewidth=1.2)
            axes[1, col].plot(dev_x, c.dev_bleu, color=colour, marker="o", markersize=3, label=c.name)
    for col, xlabel in enumerate(("updates", "training minutes (validation excluded)")):
        axes[1, col].set_xlabel(xlabel)
        for row in (0, 1):
            axes[row, col].grid(alpha=0.3)
    axes[0, 0].set_ylabel("training loss (per target token)")
    axes[1, 0].set_ylabel("dev BLEU")
    axes[0, 0].legend(loc="upper right", fontsize=9)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_curves(runs: Sequence[Curves], out: str | Path, title: Optional[str] = None) -> Path:
    """Draw `curves_figure` into the PNG file ``out``."""
    import matplotlib.pyplot as plt

    path = Path(out)
    if not path.parent.is_dir():
        raise UserError(f"{path.parent}: no such directory (--out)")
    fig = curves_figure(runs, title)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
