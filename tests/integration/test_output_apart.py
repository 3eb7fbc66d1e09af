"""An output file that is also one of a command's inputs is refused before anything is
written: `rnmt translate --input a --output a` left `a` empty (opened for writing before it
was read), `rnmt align` and `rnmt evaluate --sentences` replaced their input with their
output. Each case: exit code 2, one line naming both options, every file unchanged."""

from __future__ import annotations

import shutil

import pytest

from rnmt.cli import main

SRC = ["Y dijo Dios", "sea la luz"]
TGT = ["And God said", "let there be light"]


@pytest.fixture()
def files(tmp_path, tiny_run):
    (tmp_path / "in.es").write_text("\n".join(SRC) + "\n", encoding="utf-8")
    (tmp_path / "in.en").write_text("\n".join(TGT) + "\n", encoding="utf-8")
    (tmp_path / "prefix.en").write_text("And\n\n", encoding="utf-8")
    (tmp_path / "by_length.md").write_text("\n".join(TGT) + "\n", encoding="utf-8")  # a hypothesis, say
    (tmp_path / "link.es").symlink_to(tmp_path / "in.es")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(tiny_run / "best.safetensors", run / "best.safetensors")
    shutil.copy(tiny_run / "log.jsonl", run / "log.jsonl")
    (tmp_path / "cfg.yaml").write_text("train:\n  lr: 0.001\n", encoding="utf-8")
    return tmp_path


def _snapshot(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


CASES = [
    (["translate", "--model", "{run}", "--input", "{d}/in.es", "--output", "{d}/in.es"], "--output", "--input"),
    (["translate", "--model", "{run}", "--input", "{d}/in.es", "--output", "{d}/link.es"], "--output", "--input"),
    (["translate", "--model", "{run}", "--input", "{d}/in.es", "--prefix", "{d}/prefix.en",
      "--output", "{d}/prefix.en"], "--output", "--prefix"),
    (["translate", "--model", "{run}", "--input", "{d}/in.es", "--output", "{run}/best.safetensors"],
     "--output", "--model"),  # a run directory stands for the checkpoint it loads
    (["score", "--model", "{run}", "--src", "{d}/in.es", "--tgt", "{d}/in.en", "--output", "{d}/in.en"],
     "--output", "--tgt"),
    (["align", "--model", "{run}", "--src", "{d}/in.es", "--tgt", "{d}/in.en", "--output", "{d}/in.es"],
     "--output", "--src"),
    (["evaluate", "--hyp", "{d}/in.en", "--ref", "{d}/in.en", "--sentences", "{d}/in.en"], "--sentences", "--hyp"),
    (["evaluate", "--hyp", "{d}/by_length.md", "--ref", "{d}/in.en", "--by-length", "{d}/in.es", "--out", "{d}"],
     "--out", "--hyp"),  # a table --by-length writes into --out
    (["plot", "{run}", "--out", "{run}/log.jsonl"], "--out", "RUN"),
    (["lr-schedule", "{d}/cfg.yaml", "--steps", "10", "--out", "{d}/cfg.yaml"], "--out", "the config"),
]


@pytest.mark.parametrize("argv, output, read", CASES, ids=[" ".join(c[0][:1] + c[0][-2:-1]) + f" {c[2]}"
                                                            for c in CASES])
def test_an_output_that_is_an_input_is_refused_and_nothing_is_lost(files, capsys, argv, output, read):
    before = _snapshot(files)
    argv = [a.format(d=files, run=files / "run") for a in argv]
    assert main([*argv, "--threads", "1"] if argv[0] in ("translate", "score", "align") else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {output} ") and f"is the file {read} reads" in err and err.count("\n") == 1
    assert _snapshot(files) == before


def test_terminal_devices_and_other_files_are_not_refused(files, capsys):
    from rnmt.commands.checks import output_apart

    output_apart("--output", "/dev/null", [("--input", "/dev/null")])  # not regular files: never the same input
    output_apart("--output", files / "new.txt", [("--input", files / "in.es")])  # does not exist yet
    output_apart("--output", files / "in.en", [("--input", files / "in.es"), ("--model", files / "missing")])
    assert main(["translate", "--model", str(files / "run"), "--input", str(files / "in.es"),
                 "--output", str(files / "out.en"), "--threads", "1"]) == 0
    assert len((files / "out.en").read_text(encoding="utf-8").splitlines()) == 2
