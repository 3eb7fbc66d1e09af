"""benchmarks/time_to_quality.py: which checkpoints it scores, what it reports, and one tiny
rnmt system timed and scored end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import load_benchmark

REPO = Path(__file__).resolve().parent.parent


ttq = load_benchmark("time_to_quality")


def test_each_mark_takes_the_last_checkpoint_saved_before_it():
    saved = [ttq.Checkpoint(Path(f"c{u}"), u, s) for u, s in [(100, 50.0), (200, 110.0), (300, 170.0), (400, 250.0)]]
    chosen = ttq.pick(saved, budget=240.0, points=4)  # marks at 60, 120, 180, 240 s
    assert [c.update for c in chosen] == [100, 200, 300]  # 400 came after the budget
    assert [c.update for c in ttq.pick(saved, budget=240.0, points=8)] == [100, 200, 300]  # no repeats
    assert ttq.pick(saved, budget=40.0, points=2) == []


def test_every_rnmt_system_names_its_precision():
    # train.amp's default (auto) is bf16 on some CPUs: a system labelled fp32 must force it.
    for system in ttq.SYSTEMS.values():
        if isinstance(system, ttq.Rnmt):
            amp = [s for s in system.sets if s.startswith("train.amp=")]
            assert amp == ["train.amp=bf16" if "bf16" in system.label else "train.amp=none"], system.name
    assert set(ttq.DEFAULT_SYSTEMS) <= set(ttq.SYSTEMS)


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
                          "points": _points((10, 12.0), (20, 20.5))},
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
    ttq.write(results, tmp_path)
    assert (tmp_path / "curves.png").stat().st_size > 10_000


@pytest.mark.integration
def test_a_tiny_rnmt_system_is_stopped_at_its_budget_and_scored(tmp_path):
    corpus = tmp_path / "corpus" / "bible-es-en"
    corpus.mkdir(parents=True)
    for split, n in (("train", 400), ("dev", 12), ("test", 10)):
        for lang in ("es", "en"):
            lines = (REPO / "data" / "sample" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()[:n]
            (corpus / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    ttq.prepare(corpus.parent, data, vocab_size=300, log=lambda *_: None)
    system = ttq.Rnmt("tiny", "tiny rnmt", save_every=2,
                      sets=["model.emb_size=16", "model.hidden_size=16", "data.batch_tokens=600",
                            "search.batch_tokens=600"])
    result = ttq.run_system(system, data, tmp_path / "out", minutes=0.4, points=2, threads=1, keep=False,
                            log=lambda *_: None)
    assert 0 < result["updates_in_budget"] and result["train_wall_seconds"] < 0.4 * 60 + 15
    minutes = [p["minutes"] for p in result["points"]]
    assert minutes == sorted(minutes) and minutes[-1] <= 0.4 and 1 <= len(minutes) <= 2
    for p in result["points"]:
        assert 0.0 <= p["test"]["bleu"] <= 100.0 and p["dev"]["length_ratio"] >= 0  # a line per reference
    assert result["parameters"] and result["parameters"] > 1000
    assert len(list((tmp_path / "out" / "tiny" / "model").glob("ckpt-*.safetensors"))) == 1  # the last scored
