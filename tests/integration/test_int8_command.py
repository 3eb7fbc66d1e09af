"""int8 decoding through `rnmt translate --int8` on a tiny trained run."""

from __future__ import annotations

from rnmt import int8
from rnmt.cli import main


def test_translate_int8_on_the_command_line(tiny_run, tmp_path, capsys):
    src = tmp_path / "in.es"
    src.write_text("hola mundo\n\nla casa\n", encoding="utf-8")
    outputs = {}
    for flag in ([], ["--int8"]):
        out = tmp_path / f"out{len(flag)}.en"
        code = main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(out),
                     "--device", "cpu", *flag])
        assert code == 0
        outputs[bool(flag)] = out.read_text(encoding="utf-8").splitlines()
    for lines in outputs.values():  # one line per input, the blank one kept blank
        assert len(lines) == 3 and lines[1] == ""


def test_int8_says_what_it_gains_on_a_cpu_without_vnni(tiny_run, tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.es"
    src.write_text("hola mundo\n", encoding="utf-8")
    for saturating in (True, False):
        monkeypatch.setattr(int8, "reduce_range", lambda saturating=saturating: saturating)
        capsys.readouterr()
        assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output",
                     str(tmp_path / "out.en"), "--device", "cpu", "--int8"]) == 0
        err = capsys.readouterr().err
        assert ("no avx512_vnni" in err and "1.34x" in err) == saturating


def test_cuda_graphs_are_on_by_default_and_the_flags_switch_them(tiny_run, tmp_path, capsys, monkeypatch):
    """Searches replay CUDA graphs by default (they then apply on CUDA only); `--no-cuda-graphs`
    turns them off for the command. On the CPU an explicit `--cuda-graphs` says it does not
    apply, and the output is the plain search's either way."""
    from rnmt.search import step_graphs

    src = tmp_path / "in.es"
    src.write_text("hola mundo\nla casa\n", encoding="utf-8")
    seen = []
    applies = step_graphs.applies
    monkeypatch.setattr(step_graphs, "applies", lambda s: seen.append(step_graphs._enabled) or applies(s))
    outputs = {}
    for flags, enabled in (([], True), (["--cuda-graphs"], True), (["--no-cuda-graphs"], False)):
        seen.clear()
        capsys.readouterr()
        out = tmp_path / f"graphs{len(outputs)}.en"
        assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(out),
                     "--device", "cpu", *flags]) == 0
        assert seen and set(seen) == {enabled}
        assert ("applies on a GPU only" in capsys.readouterr().err) == (flags == ["--cuda-graphs"])
        outputs[tuple(flags)] = out.read_text(encoding="utf-8")
    assert len(set(outputs.values())) == 1
    assert step_graphs._enabled is True  # restored after the command


def test_an_unknown_int8_kernels_choice_is_a_one_line_error(tiny_run, tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.es"
    src.write_text("hola mundo\n", encoding="utf-8")
    monkeypatch.setenv("RNMT_INT8_KERNELS", "mkl")  # earlier versions' variable: no longer read
    code = main(["translate", "--model", str(tiny_run), "--input", str(src), "--output",
                 str(tmp_path / "out.en"), "--device", "cpu", "--int8"])
    assert code == 0 and capsys.readouterr().err.count("error") == 0
    code = main(["translate", "--model", str(tiny_run), "--input", str(src), "--output",
                 str(tmp_path / "out.en"), "--device", "cpu", "--int8", "--set", "runtime.int8_kernels=mkl"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "error: config key 'runtime.int8_kernels' must be one of auto, fbgemm, onednn, got 'mkl'"]
