"""`rnmt export` on a tiny trained run: the directory the contract describes
(docs/export-format.md), whose graphs translate as `rnmt translate --greedy` does when
driven by the manifest alone, and its refusals of a bad --out."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import onnxruntime as ort
import sentencepiece as spm

from rnmt.cli import main

LINES = ["hola mundo", "la casa es grande y el perro duerme en el jardín", "y dijo Dios: sea la luz."]


def export(run, out, *flags):
    return main(["export", str(run), "--out", str(out), *flags])


def greedy(directory, manifest, line):
    """Greedy search over the exported graphs, reading only the manifest's rules."""
    sp = spm.SentencePieceProcessor(model_file=str(directory / manifest["vocab"]["src"]))
    ids = sp.EncodeAsIds(line) + [manifest["special_ids"]["eos"]] * manifest["text"]["source_eos"]
    run = {k: ort.InferenceSession(str(directory / f)) for k, f in manifest["graphs"].items()}
    src = np.array([ids], dtype=np.int64)
    memory = dict(zip(manifest["memory"], run["encoder"].run(None, {"src": src, "src_mask": src != 0})))
    feed_memory = {f"memory.{k}": v for k, v in memory.items()}
    state = dict(zip(manifest["state"], run["init"].run(None, feed_memory)))
    rules, special = manifest["search_defaults"], manifest["special_ids"]
    limit = min(math.floor(len(ids) * rules["max_len_ratio"]) + rules["max_len_offset"], rules["max_output_tokens"])
    prev, out = special["bos"], []
    for t in range(limit):
        feed = {"prev_tokens": np.array([prev], dtype=np.int64), **feed_memory,
                **{f"state.{k}": v for k, v in state.items()}}
        log_probs, *rest = run["step"].run(None, feed)
        state = dict(zip(manifest["state"], rest[:len(manifest["state"])]))
        scores = log_probs[0].copy()
        for name in manifest["text"]["masked_in_search"]:
            scores[special[name]] = -np.inf
        if t + 1 >= limit:
            scores[np.arange(len(scores)) != special["eos"]] = -np.inf
        prev = int(scores.argmax())
        if prev == special["eos"]:
            break
        out.append(prev)
    tgt = spm.SentencePieceProcessor(model_file=str(directory / manifest["vocab"]["tgt"]))
    return tgt.DecodeIds(out)


def test_export_writes_the_contract_and_translates_as_rnmt_does(tiny_run, tmp_path, capsys):
    out = tmp_path / "exported"
    assert export(tiny_run, out) == 0
    assert "exported rnnsearch (fp32)" in capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "rnmt-export" and manifest["format_version"] == 1
    assert manifest["architecture"] == "rnnsearch" and manifest["unit"] == "gru" and manifest["precision"] == "fp32"
    assert manifest["special_ids"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3}
    assert manifest["source_checkpoint"] == "best.safetensors"
    assert manifest["fingerprint"] == hashlib.sha256((tiny_run / "best.safetensors").read_bytes()).hexdigest()
    assert manifest["search_defaults"]["beam"] == 2 and manifest["search_defaults"]["max_len_offset"] == 2
    assert set(manifest["files"]) == {p.name for p in out.iterdir()} - {"manifest.json"}
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert max(manifest["parity"].values()) < 1e-4
    src = tmp_path / "in.es"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(tmp_path / "out.en"),
                 "--greedy", "--device", "cpu"]) == 0
    expected = (tmp_path / "out.en").read_text(encoding="utf-8").splitlines()
    assert [greedy(out, manifest, line) for line in LINES] == expected


def test_an_out_that_is_not_empty_is_refused_unless_forced(tiny_run, tmp_path, capsys):
    out = tmp_path / "exported"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    assert export(tiny_run, out) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(out) in err and "--force" in err and err.count("\n") == 1
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert export(tiny_run, out, "--force") == 0
    assert "notes.txt" not in {p.name for p in out.iterdir()} and (out / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exported"]  # no temporary directory left


def test_an_out_that_is_a_file_is_refused(tiny_run, tmp_path, capsys):
    out = tmp_path / "exported"
    out.write_text("a file", encoding="utf-8")
    assert export(tiny_run, out, "--force") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(out) in err and "not a directory" in err
    assert out.read_text(encoding="utf-8") == "a file"


def test_int8_export_of_a_checkpoint_file_quantises_the_step_and_stays_close(tiny_run, tmp_path, capsys):
    import onnx

    assert export(tiny_run / "ckpt-3.safetensors", tmp_path / "int8", "--int8", "--opset", "18") == 0
    manifest = json.loads((tmp_path / "int8" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["precision"] == "int8" and set(manifest["graphs"].values()) <= set(manifest["files"])
    assert manifest["source_checkpoint"] == "ckpt-3.safetensors" and manifest["opset"] == 18
    assert onnx.load(str(tmp_path / "int8" / "step.onnx")).opset_import[0].version == 18
    ops = {node.op_type for node in onnx.load(str(tmp_path / "int8" / "step.onnx")).graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops
    assert 0 < max(manifest["parity"].values()) < 0.05  # quantised: not exact, but close


def test_exporting_twice_writes_the_same_bytes(tiny_run, tmp_path, capsys):
    """An export is a function of the checkpoint: the same files, byte for byte (and so the
    same hashes in the manifest), however often it is made, in fp32 and in int8."""
    for flags in ([], ["--int8"]):
        first, second = tmp_path / f"a{len(flags)}", tmp_path / f"b{len(flags)}"
        assert export(tiny_run, first, *flags) == 0 and export(tiny_run, second, *flags) == 0
        names = sorted(p.name for p in first.iterdir())
        assert names == sorted(p.name for p in second.iterdir())
        for name in names:
            assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} {flags}"
