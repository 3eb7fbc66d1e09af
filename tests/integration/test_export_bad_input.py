"""`rnmt export`'s bad input: one line ``error: ...`` naming the file, exit status 2, and
nothing written: --out as it was and no temporary directory beside it."""

from __future__ import annotations

import pickle
import shutil

import pytest
import torch

from rnmt.cli import main
from rnmt.models.rnnsearch import RNNSearch


def run_export(capsys, source, out, *flags):
    capsys.readouterr()
    code = main(["export", str(source), "--out", str(out), *flags])
    err = capsys.readouterr().err
    return code, err


def assert_refused(code, err, *named):
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    for name in named:
        assert str(name) in err


def assert_nothing_written(parent, before):
    assert sorted(p.name for p in parent.iterdir()) == before


def test_a_missing_checkpoint(tmp_path, capsys):
    code, err = run_export(capsys, tmp_path / "nowhere.safetensors", tmp_path / "out")
    assert_refused(code, err, tmp_path / "nowhere.safetensors")
    assert not (tmp_path / "out").exists()


def test_a_corrupt_checkpoint(tiny_run, tmp_path, capsys):
    damaged = tmp_path / "cut.safetensors"
    data = (tiny_run / "best.safetensors").read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    code, err = run_export(capsys, damaged, tmp_path / "out")
    assert_refused(code, err, damaged)
    assert_nothing_written(tmp_path, ["cut.safetensors"])


class _Planted:
    """Unpickling this would create a file: loading the export's input must never do it."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_a_foreign_checkpoint_is_refused_without_running_its_code(tmp_path, capsys):
    planted = tmp_path / "planted.txt"
    foreign = tmp_path / "model.pt"
    foreign.write_bytes(pickle.dumps({"model": _Planted(planted)}))
    code, err = run_export(capsys, foreign, tmp_path / "out")
    assert_refused(code, err, foreign)
    assert not planted.exists()
    other = tmp_path / "other.safetensors"  # a safetensors file, but not rnmt's
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, str(other))
    code, err = run_export(capsys, other, tmp_path / "out")
    assert_refused(code, err, other)
    assert "not an rnmt checkpoint" in err
    assert_nothing_written(tmp_path, ["model.pt", "other.safetensors"])


def test_an_unexportable_model_names_why_and_writes_nothing(tiny_run, tmp_path, capsys, monkeypatch):
    """A model whose initial state branches in Python on the source's values: tracing freezes
    the branch, the check on untraced shapes catches it, and --out keeps what it held."""
    plain = RNNSearch.init_state

    def branching(self, memory):
        state = plain(self, memory)
        if memory["src_mask"].size(1) > 12:  # a Python decision on a size: frozen by the trace
            state = {"s": state["s"] * 0.5}
        return state

    monkeypatch.setattr(RNNSearch, "init_state", branching)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    code, err = run_export(capsys, tiny_run, out, "--force")
    assert_refused(code, err, tiny_run / "best.safetensors")
    assert "cannot be exported" in err and "differs from the model" in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert_nothing_written(tmp_path, ["out"])


@pytest.mark.parametrize("opset", ["12", "99"])
def test_an_opset_outside_the_supported_range(tiny_run, tmp_path, capsys, opset):
    code, err = run_export(capsys, tiny_run, tmp_path / "out", "--opset", opset)
    assert_refused(code, err, f"--opset {opset}")
    assert not (tmp_path / "out").exists()


def test_a_run_directory_without_a_checkpoint(tiny_run, tmp_path, capsys):
    empty = tmp_path / "run"
    shutil.copytree(tiny_run, empty, ignore=shutil.ignore_patterns("*.safetensors"))
    code, err = run_export(capsys, empty, tmp_path / "out")
    assert_refused(code, err, empty)
    assert not (tmp_path / "out").exists()


def test_a_model_whose_graph_onnxruntime_refuses_on_other_shapes(tiny_run, tmp_path, capsys, monkeypatch):
    """A batch size read into a Python int is frozen by the trace: onnxruntime then refuses
    the graph on another batch, which is the one-line reason, not its traceback."""
    plain = RNNSearch.init_state

    def frozen(self, memory):
        s = plain(self, memory)["s"]
        return {"s": s.reshape(int(s.size(0)), s.size(1))}

    monkeypatch.setattr(RNNSearch, "init_state", frozen)
    code, err = run_export(capsys, tiny_run, tmp_path / "out")
    assert_refused(code, err, tiny_run / "best.safetensors")
    assert "cannot be exported" in err
    assert not (tmp_path / "out").exists()
