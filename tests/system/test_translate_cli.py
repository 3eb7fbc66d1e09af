"""`rnmt translate` and `rnmt score` as run: a pipe answered line by line, the progress bar,
one-line errors."""

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

import rnmt
from rnmt.cli import main
from tests.support import GENESIS_LINES, REPO, assert_one_line_error, run_rnmt, translate


def test_a_line_is_answered_while_the_pipe_stays_open(tiny_run):
    proc = subprocess.Popen([sys.executable, "-m", "rnmt", "translate", "--model", str(tiny_run), "--beam", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        answers = []
        for line in GENESIS_LINES[:2]:
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


def test_progress_bar_with_lines_per_second_on_a_terminal(tiny_run, src_file):
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    proc = subprocess.Popen([sys.executable, "-m", "rnmt", "translate", "--model", str(tiny_run), "--input",
                             str(src_file), "--beam", "2", "--chunk-lines", "2"],
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


def test_prefix_file_of_another_length_is_refused(tiny_run, src_file, tmp_path, capsys):
    prefixes = tmp_path / "prefix.en"
    prefixes.write_text("And\nThen\n", encoding="utf-8")
    assert translate("--model", tiny_run, "--input", src_file, "--prefix", prefixes) == 2
    assert "has 2 lines but the input" in capsys.readouterr().err
    piped = run_rnmt("translate", "--model", tiny_run, "--prefix", prefixes, stdin="\n".join(GENESIS_LINES) + "\n")
    assert_one_line_error(piped, "has 2 lines but the input has more")


@pytest.mark.parametrize("args, needle", [
    (["--sample", "--beam", "4"], "--sample draws each word at random: it does not combine with --beam"),
    (["--topk", "5"], "--topk applies only with --sample"),
    (["--sample", "--temperature", "0"], "--temperature must be greater than 0, got 0.0"),
    (["--chunk-lines", "0"], "--chunk-lines must be at least 1"),
])
def test_bad_sampling_options_are_one_line_errors(tiny_run, args, needle):
    assert_one_line_error(run_rnmt("translate", "--model", tiny_run, *args, stdin="hola\n"), needle)


def test_score_command_gives_one_score_per_pair(tiny_run, src_file, tmp_path, capsys):
    tgt = tmp_path / "tgt.en"
    refs = ["And God said, Let there be light.", "", "And God saw the light.", "And God called the light Day",
            "and the darkness he called Night."]
    tgt.write_text("\n".join(refs) + "\n", encoding="utf-8")
    assert main(["score", "--model", str(tiny_run), "--src", str(src_file), "--tgt", str(tgt),
                 "--chunk-lines", "2"]) == 0
    scores = [float(x) for x in capsys.readouterr().out.split()]
    expected = rnmt.load(tiny_run, device="cpu").score(GENESIS_LINES, refs)
    assert scores == pytest.approx([s.log_prob for s in expected], abs=1e-3)
    assert main(["score", "--model", str(tiny_run), "--src", str(src_file), "--tgt", str(tgt), "--tokens",
                 "--normalize", "length"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [len(r[1].split()) for r in rows] == [len(s.tokens) for s in expected]
    assert float(rows[0][0]) == pytest.approx(expected[0].log_prob / len(expected[0].tokens), abs=1e-3)
    short = tmp_path / "short.en"
    short.write_text("one\n", encoding="utf-8")
    assert_one_line_error(run_rnmt("score", "--model", tiny_run, "--src", src_file, "--tgt", short),
                          "--tgt", "has 1 lines but the input")
