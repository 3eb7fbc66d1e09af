"""int8 decoding through `rnmt translate --int8` on a tiny trained run."""

from __future__ import annotations

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
