"""Bounded translation: the output cap shared by the command line, the API and the server,
and long source lines translated in pieces (rnmt/search/limits.py)."""

from __future__ import annotations

import random
import time
import warnings

import pytest
import torch

import rnmt
from rnmt.cli import main
from rnmt.errors import LongLineWarning
from rnmt.search.limits import MAX_OUTPUT_TOKENS, default_input_limit, ends_sentence, output_limits, split_source

# -- the rules ---------------------------------------------------------------------------

def test_output_limits_follow_the_source_up_to_the_cap():
    lengths = torch.tensor([1, 10, 100, 1000])
    assert output_limits(lengths, 1.5, 10, None).tolist() == [11, 25, 160, 1510]
    assert output_limits(lengths, 1.5, 10, 256).tolist() == [11, 25, 160, 256]
    assert output_limits(lengths, 0.0, 0, 256).tolist() == [1, 1, 1, 1]  # room for the end mark at least


def test_the_default_piece_is_the_longest_source_the_cap_does_not_cut():
    limit = default_input_limit(1.5, 10, 256)
    assert output_limits(torch.tensor([limit]), 1.5, 10, 256).item() <= 256
    assert output_limits(torch.tensor([limit + 1]), 1.5, 10, None).item() > 256
    assert default_input_limit(0.0, 10, 256) == 256 and default_input_limit(100.0, 10, 256) == 16


def test_one_setting_for_the_command_line_the_api_and_the_server():
    from rnmt.cli import build_parser
    from rnmt.serve.settings import ServeSettings

    parser = build_parser()
    translate = parser.parse_args(["translate", "--model", "m"])
    serve = parser.parse_args(["serve", "--model", "m"])
    assert translate.max_output_tokens == serve.max_output_tokens == ServeSettings().max_output_tokens \
        == MAX_OUTPUT_TOKENS


WORDS = ["\u2581a", "b", "c", "\u2581d.", "\u2581e", "f", "\u2581g", "h", "i", "j", "k"]  # piece ids 0..10


def split(ids, size):
    return split_source(ids, size, lambda t: WORDS[t].startswith("\u2581"), lambda t: ends_sentence(WORDS[t]))


def test_split_prefers_a_sentence_end_then_a_word_start_then_any_position():
    assert split([0, 1, 2, 3, 4, 5, 0, 1], 6) == [[0, 1, 2, 3], [4, 5, 0, 1]]  # after 'd.'
    assert split([0, 1, 2, 4, 5, 6, 7], 5) == [[0, 1, 2, 4, 5], [6, 7]]  # before the word 'g'
    assert split([6, 7, 8, 9, 10, 7, 8], 3) == [[6, 7, 8], [9, 10, 7], [8]]  # one word longer than a piece
    ids = [random.Random(0).randrange(len(WORDS)) for _ in range(500)]
    pieces = split(ids, 7)
    assert sum(pieces, []) == ids and all(1 <= len(p) <= 7 for p in pieces)


@pytest.mark.parametrize("piece, ends", [("\u2581Dios.", True), ("?", True), ('."', True), ("\u2581luz", False),
                                         (":", False), ("\u2581(", False)])
def test_sentence_ends(piece, ends):
    assert ends_sentence(piece) is ends


# -- on a model --------------------------------------------------------------------------

def long_line(words, seed=0):
    vocabulary = "Y dijo Dios : Sea la luz . y fue la luz , y vio que era buena".split()
    rng = random.Random(seed)
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def test_a_long_line_is_translated_in_pieces_into_one_line(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    lines = ["Y dijo Dios.", long_line(600), "", "sea la luz"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = model.translate(lines, max_input_tokens=40)
    assert len(out) == 4 and out[2] == ""
    long_ones = [w.message for w in caught if isinstance(w.message, LongLineWarning)]
    assert len(long_ones) == 1 and long_ones[0].line == 2 and long_ones[0].pieces >= 10
    assert "line 2" in str(long_ones[0]) and "max_input_tokens=40" in str(long_ones[0])
    # the short lines are translated as they were without pieces
    assert [out[0], out[3]] == model.translate([lines[0], lines[3]], max_input_tokens=1000)


def test_every_output_is_capped(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    translator = model._translator
    results = translator.translate([long_line(120), "Y dijo Dios."], max_output=7, beam=2)
    assert all(len(h.tokens) <= 6 for hyps in results for h in hyps)  # 7 with the end mark
    with pytest.warns(LongLineWarning, match="line 1: "):
        nbest = model.translate([long_line(50)], beam=3, nbest=3, max_output_tokens=5, max_input_tokens=20)
    assert len(nbest) == 1 and len(nbest[0]) == 3
    with pytest.raises(rnmt.UserError, match="option 'max_output_tokens' must be an integer of at least 1"):
        model.translate(["a"], max_output_tokens=0)
    with pytest.raises(rnmt.UserError, match="option 'normalize' must be one of gnmt, length, none"):
        model.translate(["a"], normalize="bogus")


def test_the_command_translates_a_long_line_quickly_with_a_warning(tiny_run, tmp_path, capsys):
    src = tmp_path / "in.es"
    src.write_text("Y dijo Dios.\n" + long_line(3000) + "\n\nsea la luz\n", encoding="utf-8")
    out = tmp_path / "out.en"
    start = time.perf_counter()
    assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(out),
                 "--max-output-tokens", "12", "--threads", "1"]) == 0
    seconds = time.perf_counter() - start
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 5 and lines[2] == "" and lines[4] == ""  # 4 lines and the final newline
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {src} line 2: ") and "--max-input-tokens" in err[0], err
    assert seconds < 120  # the old command took minutes for this line on a loaded machine


def test_an_unwritable_output_is_one_line_before_translating(tiny_run, tmp_path, capsys):
    src = tmp_path / "in.es"
    src.write_text("Y dijo Dios.\n", encoding="utf-8")
    assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {tmp_path}: is a directory: name a file"]


@pytest.mark.parametrize("option, value, needle", [
    ("--max-output-tokens", "0", "--max-output-tokens must be at least 1"),
    ("--max-input-tokens", "1", "--max-input-tokens must be at least 2"),
    ("--alpha", "nan", "--alpha must be a finite number of at least 0"),
    ("--max-len-ratio", "-1", "--max-len-ratio must be a finite number of at least 0"),
])
def test_bad_translate_options_are_one_line(tiny_run, capsys, option, value, needle):
    assert main(["translate", "--model", str(tiny_run), option, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {needle}, got "), err
