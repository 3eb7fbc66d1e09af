"""`rnmt translate` and `rnmt score` in-process: chunks, prefixes, sampling and token scores."""

from __future__ import annotations

import pytest

import rnmt
from tests.support import GENESIS_LINES, translate


def read(path) -> list:
    return path.read_text(encoding="utf-8").splitlines()


def test_chunks_give_the_file_translation_in_order(tiny_run, src_file, tmp_path):
    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    assert translate("--model", tiny_run, "--input", src_file, "--output", whole, "--nbest", "2", "--beam", "2") == 0
    assert translate("--model", tiny_run, "--input", src_file, "--output", chunked, "--nbest", "2", "--beam", "2",
                     "--chunk-lines", "2") == 0
    assert read(chunked) == read(whole)
    assert [int(line.split(" ||| ")[0]) for line in read(whole)] == [0, 0, 1, 2, 2, 3, 3, 4, 4]


def test_scores_give_one_log_probability_per_piece(tiny_run, src_file, tmp_path):
    out = tmp_path / "out"
    assert translate("--model", tiny_run, "--input", src_file, "--output", out, "--beam", "2", "--scores",
                     "--normalize", "none") == 0
    rows = [line.split("\t") for line in read(out)]
    assert len(rows) == len(GENESIS_LINES) and all(len(r) == 3 for r in rows)
    assert rows[1] == ["", "", ""]  # a blank line: no text, no scores
    model = rnmt.load(tiny_run, device="cpu")
    best = model.translate(GENESIS_LINES, beam=2, nbest=2, normalize="none")
    for (text, logprobs, pieces), hyps in zip(rows, best):
        if text:
            values = [float(x) for x in logprobs.split()]
            assert text == hyps[0].text and pieces.split()[-1] == "</s>"
            assert len(values) == len(pieces.split())
            assert sum(values) == pytest.approx(hyps[0].score, abs=1e-2)  # the search's own log-probability


def test_prefix_file_starts_each_output(tiny_run, src_file, tmp_path):
    prefixes, out = tmp_path / "prefix.en", tmp_path / "out"
    prefixes.write_text("And God said\n\n\nThen\nAnd the darkness\n", encoding="utf-8")
    assert translate("--model", tiny_run, "--input", src_file, "--output", out, "--prefix", prefixes,
                     "--chunk-lines", "2") == 0
    got = read(out)
    assert got[0].startswith("And God said") and got[3].startswith("Then") and got[4].startswith("And the darkness")
    assert got[1] == ""


def test_same_seed_same_samples_through_the_command(tiny_run, src_file, tmp_path):
    outputs = []
    for k, chunk in enumerate(["5000", "2", "5000"]):
        out = tmp_path / f"out{k}"
        seed = "7" if k < 2 else "8"
        assert translate("--model", tiny_run, "--input", src_file, "--output", out, "--sample", "--topk", "20",
                         "--nbest", "2", "--seed", seed, "--chunk-lines", chunk) == 0
        outputs.append(read(out))
    assert outputs[0] == outputs[1] and outputs[0] != outputs[2]
    assert len(outputs[0]) == 2 * len(GENESIS_LINES) - 1  # two samples per line, one for the blank line


def test_coverage_reaches_the_search_from_the_option_and_the_config(tiny_run, src_file, tmp_path, monkeypatch):
    from rnmt.cli import main
    from rnmt.search import translator

    seen = []
    search = translator.beam_search
    monkeypatch.setattr(translator, "beam_search", lambda *a, **k: seen.append(k["coverage"]) or search(*a, **k))
    out = tmp_path / "out.en"
    assert main(["translate", "--model", str(tiny_run), "--input", str(src_file), "--output", str(out),
                 "--beam", "3", "--coverage", "0.25", "--threads", "1"]) == 0
    assert seen and set(seen) == {0.25}
    seen.clear()
    model = rnmt.load(tiny_run)
    model.config.search.coverage = 0.5  # a config's default
    model.translate(GENESIS_LINES[:2], beam=3)
    assert set(seen) == {0.5}


@pytest.mark.parametrize("command", ["score", "translate"])
def test_an_aligned_file_may_be_a_pipe_beside_a_regular_input(tiny_run, src_file, tmp_path, command, capsys):
    # `--tgt <(sed ...)` beside a regular --src: the pipe was counted first (read to its end)
    # and then read again, empty ("has 0 lines but the input has more")
    import os

    from rnmt.cli import main

    lines = read(src_file)
    text = "".join(("And" if command == "translate" else "And God said.") + "\n" for _ in lines)
    r, w = os.pipe()  # as bash's process substitution: /dev/fd/N of a pipe
    os.write(w, text.encode("utf-8"))  # far below a pipe's buffer
    os.close(w)
    option = "--tgt" if command == "score" else "--prefix"
    source = "--src" if command == "score" else "--input"
    out = tmp_path / "out.txt"
    try:
        code = main([command, "--model", str(tiny_run), source, str(src_file), option, f"/dev/fd/{r}",
                     "--output", str(out), "--threads", "1"])
    finally:
        os.close(r)
    assert code == 0, capsys.readouterr().err
    got = read(out)
    assert len(got) == len(lines)
    if command == "translate":
        assert all(line.startswith("And") for line, src in zip(got, lines) if src.strip())


def test_output_dash_is_standard_output_as_input_dash_is_standard_input(tiny_run, src_file, tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    whole = tmp_path / "whole"
    assert translate("--model", tiny_run, "--input", src_file, "--output", whole) == 0
    assert translate("--model", tiny_run, "--input", src_file, "--output", "-") == 0
    assert capsys.readouterr().out.splitlines() == read(whole) and not (tmp_path / "-").exists()
