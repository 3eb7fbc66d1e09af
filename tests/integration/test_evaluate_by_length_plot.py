"""Length buckets: the plot is a readable PNG with one line per system."""

from __future__ import annotations

from rnmt.evaluation.by_length import (
    bleu_by_length,
)


def test_plot_is_a_readable_png_with_one_line_per_system(tmp_path):
    import matplotlib.image

    from rnmt.evaluation.plots import plot_by_length

    rows = bleu_by_length([3, 12], {"a": ["x y z", "p q"], "b": ["x y", "p q r"]},
                          [["x y z", "p q r"]], [0, 10])["disjoint"]
    path = plot_by_length(rows, ["a", "b"], "disjoint", tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
