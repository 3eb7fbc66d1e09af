"""benchmarks/gpu.py on the CPU at toy sizes: the JSON a GPU run writes, and the peers' device flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.peers.base import Settings
from benchmarks.peers.fairseq.driver import Fairseq
from benchmarks.peers.opennmt.driver import OpenNMT
from tests.support import SAMPLE, load_benchmark

gpu = load_benchmark("gpu")


def mini_corpus(root: Path) -> Path:
    """data/mini/{train,dev}.{es,en}: a few hundred pairs of the bundled sample."""
    corpus = root / "mini"
    corpus.mkdir(parents=True)
    for lang in ("es", "en"):
        lines = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        (corpus / f"train.{lang}").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
        (corpus / f"dev.{lang}").write_text("\n".join(lines[5000:5006]) + "\n", encoding="utf-8")
    return root


@pytest.mark.integration
def test_cpu_smoke_run_writes_the_json_of_a_gpu_run(tmp_path, capsys):
    data = mini_corpus(tmp_path / "data")
    out = tmp_path / "out"
    code = gpu.main([
        "--device", "cpu", "--data", str(data), "--corpus", "mini", "--vocab-size", "300",
        "--prepared", str(tmp_path / "prepared"), "--out", str(out), "--name", "smoke", "--commit", "abc1234",
        "--systems", "rnnsearch-gru", "--precisions", "fp32", "--dims", "16,24", "--batch-tokens", "600",
        "--warmup", "1", "--steps", "2", "--seconds", "30", "--decode-sentences", "3", "--beam", "2",
        "--paper-systems", "atr", "--paper-precisions", "fp32", "--paper-dims", "16,24", "--paper-vocab", "300",
        "--paper-warmup", "1", "--paper-steps", "1",
        "--peers", "opennmt", "--peer-site", str(tmp_path / "no-site"),
        "--profile", "--profile-systems", "rnnsearch-gru", "--profile-sentences", "2", "--profile-rows", "5",
        "--compile-step", "--compile-warmup", "1", "--threads", "1"])
    assert code == 0
    result = json.loads((out / "smoke.json").read_text(encoding="utf-8"))
    meta = result["meta"]
    assert meta["commit"] == "abc1234" and "-m benchmarks.gpu" in meta["command"]
    assert meta["machine"]["device_name"] == "cpu" and meta["machine"]["torch"]
    assert "cuda" in meta["machine"]  # None here; the CUDA version on a GPU

    (row,) = result["systems"]
    assert (row["system"], row["precision"], row["status"], row["amp"]) == ("rnnsearch-gru", "fp32", "ok", "fp32")
    train = row["train"]
    assert train["updates"] == 2 and train["warmup_updates"] == 1
    assert train["target_tokens_per_s"] > 0 and train["seconds_per_update_median"] > 0
    assert {"peak_allocated_mib", "peak_reserved_mib"} <= set(train)  # None on the CPU
    compiled = row["train_compiled"]  # the same model again with its step through torch.compile
    assert compiled["status"] == "ok" and compiled["updates"] == 2 and compiled["target_tokens_per_s"] > 0
    assert compiled["compile_seconds"] > 0
    decode = row["decode"]
    assert decode["sentences"] == 3 and decode["complete"] and decode["beam"] == 2 and decode["sentences_per_s"] > 0

    (paper,) = result["paper_sizes"]
    assert paper["status"] == "ok" and paper["vocab"] == [300, 300] and paper["batch"] == "80 sentences"
    assert paper["train"]["updates"] == 1 and paper["train"]["seconds_per_update_median"] > 0

    (peer,) = result["peers"]  # OpenNMT-py is not installed in the given site: a skipped row
    assert (peer["system"], peer["precision"], peer["status"]) == ("opennmt", "fp32", "skipped")
    assert result["train_ratio_vs_fairseq"] == {}

    profile = (out / "profile-smoke.txt").read_text(encoding="utf-8")
    assert "rnnsearch-gru fp32: one training update" in profile and "beam search" in profile
    assert "rnnsearch-gru fp32: one training update, the step compiled" in profile  # after, beside before
    assert "| RNNSearch-GRU | fp32 |" in capsys.readouterr().out


def test_ratio_vs_fairseq_sets_bf16_against_fairseqs_fp16():
    def row(system, precision, tok_s, sent_s):
        return {"system": system, "precision": precision, "status": "ok",
                "train": {"target_tokens_per_s": tok_s}, "decode": {"sentences_per_s": sent_s}}

    payload = {"systems": [row("rnnsearch-gru", "fp32", 30000.0, 40.0), row("rnnsearch-gru", "bf16", 45000.0, 50.0)],
               "peers": [row("fairseq", "fp32", 20000.0, 20.0), row("fairseq", "fp16", 30000.0, 25.0),
                         row("opennmt", "fp32", 10.0, 1.0)]}
    gpu.ratios(payload)
    assert payload["train_ratio_vs_fairseq"] == {"fp32": 1.5, "bf16/fp16": 1.5}
    assert payload["decode_ratio_vs_fairseq"] == {"fp32": 2.0, "bf16/fp16": 2.0}


def test_on_a_cpu_rnmts_bf16_is_set_against_fairseqs_fp32():
    def row(system, precision, tok_s):
        return {"system": system, "precision": precision, "status": "ok", "train": {"target_tokens_per_s": tok_s}}

    payload = {"meta": {"machine": {"device": "cpu"}},
               "systems": [row("rnnsearch-gru", "fp32", 1500.0), row("rnnsearch-gru", "bf16", 3000.0)],
               "peers": [row("fairseq", "fp32", 1000.0)]}
    gpu.ratios(payload)
    assert payload["train_ratio_vs_fairseq"] == {"fp32": 1.5, "bf16/fp32": 3.0}
    payload["meta"]["machine"]["device"] = "cuda:0"  # on a GPU only fairseq's fp16 row counts
    gpu.ratios(payload)
    assert payload["train_ratio_vs_fairseq"] == {"fp32": 1.5}


def test_peers_keep_their_cpu_commands_and_gain_gpu_ones(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    (tmp_path / "pieces").mkdir()
    for side in ("src", "tgt"):
        (tmp_path / "pieces" / f"dev.{side}").write_text("a b\n", encoding="utf-8")
    stats = {"vocab_size": 8000, "dev": {"pairs": 10, "max_src_len": 40}}
    cpu = Settings(data=tmp_path, stats=stats, work=tmp_path / "w")
    cuda = Settings(data=tmp_path, stats=stats, work=tmp_path / "w", device="cuda")
    half = Settings(data=tmp_path, stats=stats, work=tmp_path / "w", device="cuda", precision="fp16")
    fairseq = Fairseq()
    assert "--cpu" in fairseq.train_command(cpu)[-1] and "--cpu" in fairseq.decode_command(cpu)
    assert "--cpu" not in fairseq.train_command(cuda)[-1] and "--fp16" not in fairseq.train_command(cuda)[-1]
    assert "--fp16" in fairseq.train_command(half)[-1] and "--fp16" in fairseq.decode_command(half)
    assert fairseq.env(cpu)["CUDA_VISIBLE_DEVICES"] == "" and "CUDA_VISIBLE_DEVICES" not in fairseq.env(cuda)

    opennmt = OpenNMT()
    assert "gpu_ranks" not in opennmt.config(cpu) and "model_dtype: fp32" in opennmt.config(cpu)
    assert "gpu_ranks: [0]" in opennmt.config(cuda) and "model_dtype: fp16" in opennmt.config(half)
    decode = opennmt.decode_command(cpu)
    assert decode[decode.index("-gpu") + 1] == "-1"
    decode = opennmt.decode_command(cuda)
    assert decode[decode.index("-gpu") + 1] == "0"
