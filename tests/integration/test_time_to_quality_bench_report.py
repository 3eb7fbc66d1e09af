"""benchmarks/time_to_quality.py: what it reports and writes."""

from __future__ import annotations

from tests.support import load_benchmark

ttq = load_benchmark("time_to_quality")


def _points(*pairs):
    return [{"minutes": m, "update": int(m * 100), "dev": {"bleu": b, "chrf": 0.0, "length_ratio": 1.0},
             "test": {"bleu": b, "chrf": 0.0, "length_ratio": 1.0}} for m, b in pairs]


def test_report_times_rnmt_against_the_best_peer_at_the_end_of_its_budget(tmp_path):
    results = {
        "meta": {"corpus": "c", "train_pairs": 10, "vocab_size": 8, "threads": 2, "minutes": 20, "commit": "abc",
                 "machine": "m", "command": "x"},
        "systems": {
            "rnmt-a": {"label": "A", "updates_in_budget": 5, "peak_rss_mib": 1, "setup_seconds": 0,
                       "points": _points((4, 10.0), (8, 21.0), (12, 25.0))},
            "rnmt-b": {"label": "B", "updates_in_budget": 5, "peak_rss_mib": 1, "setup_seconds": 0,
                       "commit": "def", "machine": "m", "points": _points((10, 5.0), (20, 15.0))},
            "fairseq-x": {"label": "X", "updates_in_budget": 5, "peak_rss_mib": 1, "setup_seconds": 3,
                          "command": "x --save-every 50", "points": _points((10, 12.0), (20, 20.5))},
            "fairseq-y": {"label": "Y", "updates_in_budget": 5, "peak_rss_mib": 1, "setup_seconds": 3,
                          "points": _points((10, 18.0), (20, 19.0))},
        },
    }
    text = ttq.report(results)
    assert "Best peer at the end of the budget: X, test BLEU 20.50 at 20.0 min." in text
    assert "| A | 8.0 | 0.40 |" in text
    assert "| B | not reached | - |" in text
    assert "**B** (rnmt-b, commit def):" in text  # trained at another commit than the others
    assert "**A** (rnmt-a):" in text
    assert "**X** (fairseq-x; command `x --save-every 50`):" in text  # added by another invocation
    ttq.write(results, tmp_path)
    assert (tmp_path / "curves.png").stat().st_size > 10_000
