"""benchmarks/zoo_ratios.py at toy sizes: the decoding pair's FLOP count and profile."""

from __future__ import annotations

import json
import sys

from tests.support import load_benchmark


def load_script():
    return load_benchmark("zoo_ratios")


def test_decoding_pair_counts_flops_per_output_token_and_profiles(tmp_path, monkeypatch, capsys):
    out = tmp_path / "zoo.json"
    monkeypatch.setattr(sys, "argv", ["zoo_ratios.py", "--dims", "16,32", "--vocab-size", "300", "--threads", "1",
                                      "--rounds", "1", "--decode-sentences", "2", "--pairs", "2", "--profile",
                                      "--json", str(out)])
    assert load_script().main() == 0
    result = json.loads(out.read_text(encoding="utf-8"))["Cseq2seq-I (LS) vs RNNSearch"]
    # Re-reading the source at every target step is more matrix work per output token than attention.
    assert result["b_mflop_tok"] > result["a_mflop_tok"]
    # Every output token costs at least one output-layer product (embedding 16 x vocabulary
    # 300, 2 FLOPs per multiply-add): a lower bound the counter must not undercut.
    assert result["a_mflop_tok"] >= 2 * 16 * 300 / 1e6
    for side in ("baseline", "compared"):
        profile = result["profile"][side]
        assert 0 < profile["products"] < 1
        assert profile["top"] and all(0 < share <= 1 for _, share, _ in profile["top"])
    assert "MFLOP/tok" in capsys.readouterr().out
