"""A damaged, foreign or newer export directory, a missing graph or vocabulary, a changed
file, a graph that needs code from outside onnxruntime, and input the runtime refuses: each
is one line ``error: ...`` naming the file (or the line), exit code 2, no traceback."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from tests.support import assert_one_line, tiny_config_tree, write_corpus

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    import rnmt
    from rnmt.export.exporter import export

    root = tmp_path_factory.mktemp("runtime-bad")
    tree = tiny_config_tree(write_corpus(root, "train", 100), write_corpus(root, "dev", 10, offset=100))
    tree["train"].update(max_steps=2, validate_every=2)
    rnmt.train(tree, [], out=root / "run", log=lambda *_: None)
    export(root / "run", root / "export")
    return root / "export"


@pytest.fixture
def copy(export_dir, tmp_path):
    target = tmp_path / "export"
    shutil.copytree(export_dir, target)
    return target


def translate(capsys, model, *extra, input_text="Dios.\n", tmp=None):
    from rnmt_runtime.cli import main

    source = (tmp or model.parent) / "input.txt"
    source.write_bytes(input_text.encode("utf-8") if isinstance(input_text, str) else input_text)
    code = main(["translate", "--model", str(model), "--input", str(source), *extra])
    return code, capsys.readouterr()


def manifest(directory):
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


def rewrite(directory, data):
    (directory / "manifest.json").write_text(json.dumps(data), encoding="utf-8")


def test_a_good_export_translates(capsys, copy):
    code, out = translate(capsys, copy)
    assert code == 0 and out.out.count("\n") == 1


@pytest.mark.parametrize("change, needles", [
    (lambda m: "{ not json", ["manifest.json", "not valid JSON"]),
    (lambda m: {**m, "format": "marian"}, ["manifest.json", "not an rnmt export"]),
    (lambda m: {**m, "format_version": 2}, ["manifest.json", "format version 2", "(1)"]),
    (lambda m: {**m, "graphs": {**m["graphs"], "step": "other.onnx"}}, ["manifest.json", "other.onnx"]),
    (lambda m: {**m, "files": {**m["files"], "../escape": "0" * 64}}, ["manifest.json", "../escape"]),
    (lambda m: {**m, "text": {"ids": "token-table"}}, ["manifest.json", "text.ids"]),
    (lambda m: {k: v for k, v in m.items() if k != "memory"}, ["manifest.json", "'memory'"]),
])
def test_a_foreign_broken_or_newer_manifest_is_one_line(capsys, copy, change, needles):
    changed = change(manifest(copy))
    if isinstance(changed, str):
        (copy / "manifest.json").write_text(changed, encoding="utf-8")
    else:
        rewrite(copy, changed)
    code, out = translate(capsys, copy)
    assert code == 2 and out.out == ""
    assert_one_line(out.err, *needles)


@pytest.mark.parametrize("kind", ["graph", "vocabulary"])
def test_a_missing_file_is_named(capsys, copy, kind):
    m = manifest(copy)
    name = m["graphs"]["step"] if kind == "graph" else m["vocab"]["tgt"]
    (copy / name).unlink()
    code, out = translate(capsys, copy)
    assert code == 2
    assert_one_line(out.err, name, "missing")


def test_a_changed_file_fails_its_hash(capsys, copy):
    step = copy / manifest(copy)["graphs"]["step"]
    data = bytearray(step.read_bytes())
    data[len(data) // 2] ^= 0xFF
    step.write_bytes(bytes(data))
    code, out = translate(capsys, copy)
    assert code == 2
    assert_one_line(out.err, step.name, "sha256", "differs")


def _rehash(directory, name):
    m = manifest(directory)
    m["files"][name] = hashlib.sha256((directory / name).read_bytes()).hexdigest()
    rewrite(directory, m)


def test_a_graph_that_is_not_onnx_is_refused_by_name(capsys, copy):
    name = manifest(copy)["graphs"]["encoder"]
    (copy / name).write_bytes(b"\x80\x04\x95 not a graph: a pickle would start so")
    _rehash(copy, name)
    code, out = translate(capsys, copy)
    assert code == 2
    assert_one_line(out.err, name, "onnxruntime cannot load")


def test_a_graph_needing_a_custom_operator_library_is_refused(capsys, copy):
    """Loading runs no code from the export: a node of an unknown domain would need a custom
    operator library, which the runtime never registers, so the graph does not load."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Payload", ["src"], ["memory.x"], domain="com.example.custom")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("src", TensorProto.INT64, ["B", "S"])],
                              [helper.make_tensor_value_info("memory.x", TensorProto.FLOAT, ["B"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example.custom", 1)])
    name = manifest(copy)["graphs"]["encoder"]
    onnx.save(model, str(copy / name))
    _rehash(copy, name)
    code, out = translate(capsys, copy)
    assert code == 2
    assert_one_line(out.err, name, "onnxruntime cannot load")


def test_input_the_runtime_refuses_is_one_line(capsys, copy, tmp_path):
    code, out = translate(capsys, copy, input_text=b"ok\n\xff\xfe broken\n", tmp=tmp_path)
    assert code == 2
    assert_one_line(out.err, "input.txt", "line 2", "UTF-8")
    code, out = translate(capsys, copy, "--greedy", "--nbest", "2", tmp=tmp_path)
    assert code == 2
    assert_one_line(out.err, "--nbest 2 needs beam search")
    code, out = translate(capsys, copy, "--beam", "9000", tmp=tmp_path)
    assert code == 2
    assert_one_line(out.err, "9,000 hypotheses per sentence")
    code, out = translate(capsys, copy, "--min-output-tokens", "5", "--max-output-tokens", "5", tmp=tmp_path)
    assert code == 2
    assert_one_line(out.err, "--min-output-tokens (5) must be below --max-output-tokens (5)")
    code, out = translate(capsys, copy, "--mbr", "chrf", "--nbest", "4", tmp=tmp_path)
    assert code == 2
    assert_one_line(out.err, "--mbr is not available with an export directory")
    code, out = translate(capsys, copy, "--epsilon", "0.1", tmp=tmp_path)
    assert code == 2
    assert_one_line(out.err, "--epsilon applies only with --sample")


def test_a_directory_that_is_no_export(capsys, tmp_path):
    from rnmt_runtime.cli import main

    (tmp_path / "input.txt").write_text("x\n", encoding="utf-8")
    code = main(["translate", "--model", str(tmp_path), "--input", str(tmp_path / "input.txt")])
    out = capsys.readouterr()
    assert code == 2
    assert_one_line(out.err, "manifest.json", "missing")
