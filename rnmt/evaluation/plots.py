"""Line plots of BLEU by source length, one PNG per bucket form.

matplotlib is imported lazily with the non-interactive Agg backend so that evaluation
works on machines without a display and costs nothing when no plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping, Sequence

from rnmt.evaluation.by_length import BucketScore

_TITLES = {
    "disjoint": "BLEU by source length",
    "longer_than": "BLEU on sentences longer than N words",
}
_XLABELS = {
    "disjoint": "source length in words (sentences per bucket)",
    "longer_than": "source sentences longer than N words (sentences)",
}


def plot_by_length(rows: Sequence[BucketScore], systems: Sequence[str], form: str,
                   path: str | Path) -> Path:
    """Draw one line per system over the buckets of one form and save it as a PNG.

    Tick labels carry each bucket's sentence count, since a score on a handful of
    sentences means little; empty buckets leave a gap in the lines.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(range(len(rows)))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        markers = "osD^v<>ph*"
        for k, name in enumerate(systems):
            ys = [float("nan") if (bleu := r.bleu[name]) is None else bleu for r in rows]
            ax.plot(xs, ys, marker=markers[k % len(markers)], label=name)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{r.bucket.label}\n(n={r.count})" for r in rows])
        ax.set_xlabel(_XLABELS[form])
        ax.set_ylabel("BLEU")
        ax.set_title(_TITLES[form])
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path


def plot_all(results: Mapping[str, Sequence[BucketScore]], systems: Sequence[str],
             out_dir: str | Path) -> List[Path]:
    """Write ``by_length_<form>.png`` for every form in ``results``."""
    return [plot_by_length(rows, systems, form, Path(out_dir) / f"by_length_{form}.png")
            for form, rows in results.items()]
