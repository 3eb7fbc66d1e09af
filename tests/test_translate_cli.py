"""`rnmt translate` streaming, prefixes, sampling and token scores, and `rnmt score`, as run."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time

import pytest
from test_cli import assert_one_line_error
from test_cli import rnmt as run_rnmt

import rnmt
from conftest import REPO
from rnmt.cli import main

pytestmark = pytest.mark.system

SOURCE = ["Y dijo Dios: Sea la luz.", "", "Y vio Dios que la luz era buena.", "Y llamó Dios á la luz Día",
          "y á las tinieblas llamó Noche."]


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.es"
    path.write_text("\n".join(SOURCE) + "\n", encoding="utf-8")
    return path


def translate(*args) -> int:
    return main(["translate", *map(str, args)])


def read(path) -> list:
    return path.read_text(encoding="utf-8").splitlines()


def test_a_line_is_answered_while_the_pipe_stays_open(tiny_run):
    proc = subprocess.Popen([sys.executable, "-m", "rnmt", "translate", "--model", str(tiny_run), "--beam", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        answers = []
        for line in SOURCE[:2]:
            proc.stdin.write((line + "\n").encode())
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 240)
            assert ready, "no answer while the pipe is open"
            answers.append(proc.stdout.readline().decode().rstrip("\n"))
        assert proc.poll() is None  # still running, waiting for more input
        assert answers[1] == ""  # an empty line is answered by an empty line
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0 and proc.stdout.read() == b""
    finally:
        proc.kill()


def test_chunks_give_the_file_translation_in_order(tiny_run, src, tmp_path):
    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    assert translate("--model", tiny_run, "--input", src, "--output", whole, "--nbest", "2", "--beam", "2") == 0
    assert translate("--model", tiny_run, "--input", src, "--output", chunked, "--nbest", "2", "--beam", "2",
                     "--chunk-lines", "2") == 0
    assert read(chunked) == read(whole)
    assert [int(line.split(" ||| ")[0]) for line in read(whole)] == [0, 0, 1, 2, 2, 3, 3, 4, 4]


def test_progress_bar_with_lines_per_second_on_a_terminal(tiny_run, src):
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    proc = subprocess.Popen([sys.executable, "-m", "rnmt", "translate", "--model", str(tiny_run), "--input",
                             str(src), "--beam", "2", "--chunk-lines", "2"],
                            stdout=subprocess.PIPE, stderr=follower, cwd=REPO)
    os.close(follower)
    seen = b""
    deadline = time.time() + 240
    while time.time() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            seen += data
        elif proc.poll() is not None:
            break
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    assert b"lines/s" in seen and b"5/5" in seen


def test_scores_give_one_log_probability_per_piece(tiny_run, src, tmp_path):
    out = tmp_path / "out"
    assert translate("--model", tiny_run, "--input", src, "--output", out, "--beam", "2", "--scores",
                     "--normalize", "none") == 0
    rows = [line.split("\t") for line in read(out)]
    assert len(rows) == len(SOURCE) and all(len(r) == 3 for r in rows)
    assert rows[1] == ["", "", ""]  # a blank line: no text, no scores
    model = rnmt.load(tiny_run, device="cpu")
    best = model.translate(SOURCE, beam=2, nbest=2, normalize="none")
    for (text, logprobs, pieces), hyps in zip(rows, best):
        if text:
            values = [float(x) for x in logprobs.split()]
            assert text == hyps[0].text and pieces.split()[-1] == "</s>"
            assert len(values) == len(pieces.split())
            assert sum(values) == pytest.approx(hyps[0].score, abs=1e-2)  # the search's own log-probability


def test_prefix_file_starts_each_output(tiny_run, src, tmp_path):
    prefixes, out = tmp_path / "prefix.en", tmp_path / "out"
    prefixes.write_text("And God said\n\n\nThen\nAnd the darkness\n", encoding="utf-8")
    assert translate("--model", tiny_run, "--input", src, "--output", out, "--prefix", prefixes,
                     "--chunk-lines", "2") == 0
    got = read(out)
    assert got[0].startswith("And God said") and got[3].startswith("Then") and got[4].startswith("And the darkness")
    assert got[1] == ""


def test_prefix_file_of_another_length_is_refused(tiny_run, src, tmp_path, capsys):
    prefixes = tmp_path / "prefix.en"
    prefixes.write_text("And\nThen\n", encoding="utf-8")
    assert translate("--model", tiny_run, "--input", src, "--prefix", prefixes) == 2
    assert "has 2 lines but the input" in capsys.readouterr().err
    piped = run_rnmt("translate", "--model", tiny_run, "--prefix", prefixes, stdin="\n".join(SOURCE) + "\n")
    assert_one_line_error(piped, "has 2 lines but the input has more")


def test_same_seed_same_samples_through_the_command(tiny_run, src, tmp_path):
    outputs = []
    for k, chunk in enumerate(["5000", "2", "5000"]):
        out = tmp_path / f"out{k}"
        seed = "7" if k < 2 else "8"
        assert translate("--model", tiny_run, "--input", src, "--output", out, "--sample", "--topk", "20",
                         "--nbest", "2", "--seed", seed, "--chunk-lines", chunk) == 0
        outputs.append(read(out))
    assert outputs[0] == outputs[1] and outputs[0] != outputs[2]
    assert len(outputs[0]) == 2 * len(SOURCE) - 1  # two samples per line, one for the blank line


@pytest.mark.parametrize("args, needle", [
    (["--sample", "--beam", "4"], "--sample draws each word at random: it does not combine with --beam"),
    (["--topk", "5"], "--topk applies only with --sample"),
    (["--sample", "--temperature", "0"], "--temperature must be above 0"),
    (["--chunk-lines", "0"], "--chunk-lines must be at least 1"),
])
def test_bad_sampling_options_are_one_line_errors(tiny_run, args, needle):
    assert_one_line_error(run_rnmt("translate", "--model", tiny_run, *args, stdin="hola\n"), needle)


def test_score_command_gives_one_score_per_pair(tiny_run, src, tmp_path, capsys):
    tgt = tmp_path / "tgt.en"
    refs = ["And God said, Let there be light.", "", "And God saw the light.", "And God called the light Day",
            "and the darkness he called Night."]
    tgt.write_text("\n".join(refs) + "\n", encoding="utf-8")
    assert main(["score", "--model", str(tiny_run), "--src", str(src), "--tgt", str(tgt), "--chunk-lines", "2"]) == 0
    scores = [float(x) for x in capsys.readouterr().out.split()]
    expected = rnmt.load(tiny_run, device="cpu").score(SOURCE, refs)
    assert scores == pytest.approx([s.log_prob for s in expected], abs=1e-3)
    assert main(["score", "--model", str(tiny_run), "--src", str(src), "--tgt", str(tgt), "--tokens",
                 "--normalize", "length"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [len(r[1].split()) for r in rows] == [len(s.tokens) for s in expected]
    assert float(rows[0][0]) == pytest.approx(expected[0].log_prob / len(expected[0].tokens), abs=1e-3)
    short = tmp_path / "short.en"
    short.write_text("one\n", encoding="utf-8")
    assert_one_line_error(run_rnmt("score", "--model", tiny_run, "--src", src, "--tgt", short),
                          "--tgt", "has 1 lines but the input")
