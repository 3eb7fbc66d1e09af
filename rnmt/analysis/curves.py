"""Training curves from runs' ``log.jsonl``: loss and dev BLEU against updates and against
training time, one line per run, so that architectures can be compared at equal time.

Training records carry ``loss`` and ``train_seconds``; validation records ``dev_bleu`` (and,
from this version on, ``train_seconds``; older logs take the time of the last training
record at or before the validation's step). Resumes and lines cut by a kill are resolved by
``rnmt.training.run_log``, as for every other reader of the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

from rnmt.errors import UserError
from rnmt.training.run_log import LOG_FILE, log_file, read_run_log


@dataclass
class Curves:
    name: str
    steps: List[int] = field(default_factory=list)  # training records
    minutes: List[float] = field(default_factory=list)
    loss: List[float] = field(default_factory=list)
    dev_steps: List[int] = field(default_factory=list)  # validation records
    dev_minutes: List[float] = field(default_factory=list)
    dev_bleu: List[float] = field(default_factory=list)
    skipped_lines: int = 0  # lines of the log that were not records (cut by a kill)


def read_curves(run: str | Path, name: Optional[str] = None) -> Curves:
    path = log_file(run)
    log = read_run_log(path)
    train = [rec for rec in log.train if "train_seconds" in rec]
    label = name or (path.parent.name if path.name == LOG_FILE else path.stem)
    curves = Curves(label, skipped_lines=log.skipped_lines)
    for rec in train:
        curves.steps.append(int(rec["step"]))
        curves.minutes.append(float(rec["train_seconds"]) / 60)
        curves.loss.append(float(rec["loss"]))
    for rec in log.dev:
        if rec.get("dev_bleu") is None:
            continue
        step, seconds = int(rec["step"]), rec.get("train_seconds")
        if seconds is None:  # an older log: the time of the last training record before it
            earlier = [r for r in train if r["step"] <= step]
            seconds = float(earlier[-1]["train_seconds"]) if earlier else 0.0
        curves.dev_steps.append(step)
        curves.dev_minutes.append(float(seconds) / 60)
        curves.dev_bleu.append(float(rec["dev_bleu"]))
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
    """Draw `curves_figure` into the image file ``out`` (`rnmt.analysis.plots.image_path`:
    PNG without a suffix); returns the path written."""
    import matplotlib.pyplot as plt

    from rnmt.analysis.plots import image_path

    path, fmt = image_path(out)
    fig = curves_figure(runs, title)
    try:
        fig.savefig(path, format=fmt, dpi=80)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path
