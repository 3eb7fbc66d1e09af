"""benchmarks/time_to_quality.py: one tiny rnmt system trained as a process, stopped at its
budget and scored."""

from __future__ import annotations

from tests.support import REPO, load_benchmark

ttq = load_benchmark("time_to_quality")


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
