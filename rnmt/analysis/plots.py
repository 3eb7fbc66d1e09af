"""Pictures of ``rnmt analyze``: token heatmaps, position-wise gate means, dependency arcs.

matplotlib is imported lazily with the Agg backend (no display needed). Figures grow with
the number of tokens so that every tick label stays readable (40 tokens and more).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np

CELL_INCHES = 0.24  # size of one token's row/column
FONT_SIZE = 8


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def image_path(out: str | Path, option: str = "--out") -> tuple[Path, str]:
    """The file a figure asked for as ``out`` goes to, and its format: the suffix's when
    matplotlib writes it, PNG (and ``.png`` added, as matplotlib would) without one; a
    directory or an unknown suffix is a `UserError` naming ``option``, before anything is
    drawn."""
    from matplotlib.backend_bases import FigureCanvasBase

    from rnmt.errors import UserError

    path = Path(out)
    if str(out) == "" or path.is_dir():
        raise UserError(f"{option} {str(out)!r}: a directory or nothing; name the image file to write")
    if not path.parent.is_dir():
        raise UserError(f"{path.parent}: no such directory ({option})")
    fmt = path.suffix[1:].lower()
    if not fmt:
        return path.with_name(path.name + ".png"), "png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if fmt not in formats:
        raise UserError(f"{option} {path}: no image format for '.{fmt}'; use one of {', '.join(sorted(formats))}")
    return path, fmt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    fig.savefig(path, format="png", dpi=100)
    return path


def heatmap(matrix, row_labels: Sequence[str], col_labels: Sequence[str], path: str | Path, *,
            title: str, xlabel: str, ylabel: str, colorbar_label: str,
            vmin: Optional[float] = None, vmax: Optional[float] = None, lower_triangle: bool = False,
            cmap: str = "viridis") -> Path:
    """A labelled ``[rows, cols]`` heatmap with a colour bar; ``lower_triangle`` blanks
    the cells above the diagonal (k > t)."""
    plt = _pyplot()
    m = np.asarray(matrix, dtype=np.float64)
    if lower_triangle:
        m = np.ma.masked_where(np.triu(np.ones_like(m, dtype=bool), 1), m)
    rows, cols = m.shape
    width = max(4.5, 2.2 + CELL_INCHES * cols + 1.0)
    height = max(3.5, 1.8 + CELL_INCHES * rows)
    label_room = 0.09 * max((len(s) for s in col_labels), default=1)
    fig, ax = plt.subplots(figsize=(width, height + label_room))
    try:
        image = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(cols))
        ax.set_xticklabels(col_labels, rotation=90, fontsize=FONT_SIZE)
        ax.set_yticks(range(rows))
        ax.set_yticklabels(row_labels, fontsize=FONT_SIZE)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
        bar.set_label(colorbar_label)
        fig.tight_layout()
        return _save(fig, path)
    finally:
        plt.close(fig)


def gate_positions(curves: Dict[str, Dict[str, np.ndarray]], path: str | Path, *, title: str) -> Path:
    """Position-wise mean input and forget gates (ATR paper, Fig. 3): one panel per unit.

    ``curves[name]`` holds ``input``, ``forget`` (means per position) and ``count``
    (sentences reaching each position); the panel title carries Pearson's r.
    """
    plt = _pyplot()
    names = list(curves)
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 2.9 * len(names)), squeeze=False)
    try:
        for ax, name in zip(axes[:, 0], names):
            c = curves[name]
            x = np.arange(1, len(c["input"]) + 1)
            ax.plot(x, c["input"], marker=".", label="input gate i (mean over units)")
            ax.plot(x, c["forget"], marker=".", label="forget gate f (mean over units)")
            ax.set_ylim(0.0, 1.0)
            ax.set_xlabel("position t (1-based; mean over the sentences reaching it)")
            ax.set_ylabel("gate value")
            r = c.get("r")
            ax.set_title(f"{name}: Pearson r = {r:.4f} over {c['pairs']} (sentence, position) pairs"
                         if r is not None else f"{name}: Pearson r undefined", fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=FONT_SIZE, loc="best")
        fig.suptitle(title, fontsize=11)
        fig.tight_layout()
        return _save(fig, path)
    finally:
        plt.close(fig)


def dependency_arcs(tokens: Sequence[str], heads: Sequence[Optional[int]], weights: Sequence[Optional[float]],
                    path: str | Path, *, title: str) -> Path:
    """Each token joined by an arc to its strongest previous token (ATR paper, Fig. 4);
    arc darkness follows the weight (mean g_k)."""
    plt = _pyplot()
    from matplotlib.patches import Arc

    n = len(tokens)
    longest = max((abs(t - h) for t, h in enumerate(heads) if h is not None), default=1)
    width = max(5.0, 0.45 * n + 1.0)
    height = 1.6 + min(4.0, 0.18 * longest + 0.6)
    fig, ax = plt.subplots(figsize=(width, height))
    try:
        real = [w for w in weights if w is not None]
        top = max(real, default=1.0) or 1.0
        for t, (h, w) in enumerate(zip(heads, weights)):
            if h is None:
                continue
            span = t - h
            shade = 0.25 + 0.75 * (w / top if w is not None else 1.0)
            ax.add_patch(Arc(((t + h) / 2, 0.0), span, span * 0.9, theta1=0, theta2=180,
                             color=plt.cm.Blues(shade), linewidth=1.6))
            ax.plot([t], [0.0], marker="v", color=plt.cm.Blues(shade), markersize=4)
        for t, tok in enumerate(tokens):
            ax.text(t, -0.15, tok, rotation=90, ha="center", va="top", fontsize=FONT_SIZE)
        ax.set_xlim(-0.8, n - 0.2)
        ax.set_ylim(-0.15 - 0.09 * max((len(s) for s in tokens), default=1), 0.5 * longest + 0.3)
        ax.axis("off")
        ax.set_title(title + "\n(arc from each token, marked \u25bc, back to the earlier token with the "
                     "largest mean g_k; darker = larger)", fontsize=9)
        fig.tight_layout()
        return _save(fig, path)
    finally:
        plt.close(fig)
