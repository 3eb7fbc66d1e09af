"""Fine-tuning (--init-from) through `rnmt train`: another architecture and a foreign
checkpoint are one-line errors."""

from __future__ import annotations

import json

from tests.support import assert_one_line_error, run_rnmt


def test_a_different_architecture_is_refused_before_anything_is_written(finetune_corpus, finetune_parent, tmp_path):
    root, tree = finetune_corpus
    config = tmp_path / "config.json"  # JSON is YAML
    config.write_text(json.dumps(tree), encoding="utf-8")
    out = tmp_path / "out"
    result = run_rnmt("train", config, "--out", out, "--init-from", finetune_parent, "--set", "model.hidden_size=32",
                      "--set", "model.dropout=0.3")  # dropout may change; the size may not
    assert_one_line_error(result, "--init-from", "model.hidden_size is 24 in the checkpoint but 32 in the config")
    assert not out.exists()


def test_a_foreign_checkpoint_is_a_one_line_error(finetune_corpus, tmp_path):
    root, tree = finetune_corpus
    config, foreign = tmp_path / "config.json", tmp_path / "foreign.safetensors"
    config.write_text(json.dumps(tree), encoding="utf-8")
    foreign.write_bytes(b"not a checkpoint at all")
    assert_one_line_error(run_rnmt("train", config, "--out", tmp_path / "out", "--init-from", foreign),
                          "foreign.safetensors")
