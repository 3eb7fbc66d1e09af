"""The export stage (rnmt.distill.export): skipped with a note without the export package,
otherwise one `rnmt export` per student (int8 when asked), each done once, failures noted."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

from rnmt.distill import export

RUNS = [{"key": "gru.student.seed1", "dir": "runs/d/runs/gru/student.seed1"},
        {"key": "gru.student.seed2", "dir": "runs/d/runs/gru/student.seed2"}]


def test_without_the_export_package_the_stage_is_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(export.importlib.util, "find_spec", lambda name: None)
    notes = export.export_students(tmp_path, RUNS, int8=False, log=lambda *_: None)
    assert len(notes) == 1 and "skipped" in notes[0] and "rnmt.export" in notes[0]
    assert not (tmp_path / "export").exists()


def test_each_student_is_exported_once_and_a_failure_is_noted(tmp_path, monkeypatch):
    calls = []

    def fake_run(command, **_):
        calls.append(command)
        failed = command[4].endswith("seed2") and len(calls) == 2
        return SimpleNamespace(returncode=2 if failed else 0, stderr="error: no onnx here\n" if failed else "")

    monkeypatch.setattr(export.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(subprocess, "run", fake_run)
    notes = export.export_students(tmp_path, RUNS, int8=True, log=lambda *_: None)
    assert [c[3:] for c in calls] == [["export", RUNS[0]["dir"], "--out", str(tmp_path / "export" / RUNS[0]["key"]),
                                       "--int8"],
                                      ["export", RUNS[1]["dir"], "--out", str(tmp_path / "export" / RUNS[1]["key"]),
                                       "--int8"]]
    assert notes == ["export of gru.student.seed2 failed: error: no onnx here"]
    # started again: the exported student is not exported twice, the failed one is tried again
    assert export.export_students(tmp_path, RUNS, int8=True, log=lambda *_: None) == []
    assert [c[4] for c in calls[2:]] == [RUNS[1]["dir"]]
