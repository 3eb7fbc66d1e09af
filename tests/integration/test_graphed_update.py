"""benchmarks/studies/graphed_update.py: the training update a CUDA graph would hold.

On the CPU what can be checked is the precondition of recording it: the update's forward,
loss, backward and clipping (the GPU's code path, host reads forbidden) read nothing back to
the host. On a GPU (`pytest --device cuda -m on_device`) the graph is recorded and replayed,
and a model trained by replay must end where the eager one does.
"""

from __future__ import annotations

import json

import pytest

from tests.support import load_benchmark

graphed_update = load_benchmark("studies.graphed_update")


@pytest.mark.on_device
def test_the_update_a_graph_holds_reads_nothing_back_and_replays_the_eager_update(tmp_path, device, capsys):
    out = tmp_path / "graphed.json"
    assert graphed_update.main([
        "--device", str(device), "--dims", "16,32", "--batch", "4", "--src-len", "9", "--tgt-len", "7",
        "--vocab", "50", "--warmup", "1", "--updates", "2", "--check", "3", "--threads", "1",
        "--commit", "abc1234", "--out", str(out)]) == 0
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert payload["meta"]["commit"] == "abc1234"
    assert [row["system"] for row in payload["systems"]] == ["rnnsearch-gru", "atr", "dtmt4"]
    for row in payload["systems"]:
        assert row["host_syncs"] == 0, row["system"]  # else no graph could record the update
        for variant in ("eager", "eager_no_host_reads"):
            assert row[variant]["updates"] == 2 and row[variant]["target_tokens_per_s"] > 0
        if device.type == "cuda":
            assert "graph_error" not in row, row.get("graph_error")
            assert row["graphed"]["updates"] == 2 and row["graphed_over_eager"] > 0
            assert row["check"]["max_abs_diff"] < 1e-4, row["check"]
        else:
            assert "graphed" not in row
    assert "host syncs in the update: 0" in capsys.readouterr().out


def test_synthetic_batches_have_one_shape_and_padding_where_the_lengths_end():
    import torch

    batches = graphed_update.synthetic_batches(3, 5, 8, 6, 40, 7, torch.device("cpu"))
    for b in batches:
        assert b["src"].shape == (5, 8) and b["tgt_in"].shape == b["tgt_out"].shape == (5, 6)
        assert b["src_mask"][0].all()  # the longest row fills the shape
        assert ((b["src"] == 0) == ~b["src_mask"]).all()
        assert ((b["tgt_out"] == 0).sum(1) == (b["tgt_in"] == 0).sum(1)).all()
