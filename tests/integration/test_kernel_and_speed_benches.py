"""benchmarks/gates_kernel.py and benchmarks/speed_pair.py on tiny inputs: they time what
they say (every sweep, both configs) and record where they were run."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from tests.support import load_benchmark, needs_kernel, tiny_config_tree, write_corpus


@needs_kernel
def test_gates_kernel_times_every_sweep_with_and_without_its_mask(capsys, monkeypatch):
    bench = load_benchmark("gates_kernel")
    from rnmt import kernels

    calls = bench.sweeps(kernels.extension(), rows=3, d=8)
    assert len(calls) == 14  # GRU and two layer-normalised units, forward/backward, each two ways; bf16 GRU
    for call in calls.values():
        call()  # each entry runs on its own inputs
    monkeypatch.setattr(sys, "argv", ["gates_kernel.py", "--rows", "3", "--size", "8", "--repeats", "2",
                                      "--rounds", "1"])
    bench.main()
    table = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("| GRU forward") for line in table) == 4  # no mask, mask, bf16 read and cast
    assert all(line.count("(") == 1 for line in table if line.startswith("| ") and "sweep" not in line)


def test_speed_pair_times_both_configs_and_applies_overrides(tmp_path, monkeypatch):
    bench = load_benchmark("speed_pair")
    train = write_corpus(tmp_path / "data", "train", 40)
    dev = write_corpus(tmp_path / "data", "dev", 5, offset=40)
    tree = tiny_config_tree(train, dev)
    tree["data"]["cache_dir"] = str(tmp_path / "cache")
    config = tmp_path / "gru.yaml"
    config.write_text(yaml.safe_dump(tree), encoding="utf-8")
    out = tmp_path / "speed.json"
    monkeypatch.setattr(sys, "argv", ["speed_pair.py", str(config), str(config), "--b-set", "model.cell=lstm",
                                      "--rounds", "2", "--steps", "1", "--warmup", "0", "--out", str(out)])
    bench.main()
    (key, result), = json.loads(out.read_text()).items()
    assert key == "rnnsearch-gru|rnnsearch-lstm"  # the override reached config B only
    assert len(result["ratios"]) == 2 and result["ratio"] > 0
    assert result["commit"] and result["machine"]["threads"] == 1 and "--b-set model.cell=lstm" in result["command"]


def test_speed_pair_refuses_an_unknown_override(tmp_path, monkeypatch):
    bench = load_benchmark("speed_pair")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_tree("t", "d")), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["speed_pair.py", str(config), str(config), "--b-set", "model.cel=lstm"])
    with pytest.raises(Exception, match="cel"):
        bench.main()
