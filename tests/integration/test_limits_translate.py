"""Bounded translation on a tiny trained run: long lines translated in pieces, every output
capped, and the command's warnings and errors."""

from __future__ import annotations

import random
import re
import time
import warnings

import pytest

import rnmt
from rnmt.cli import main
from rnmt.errors import LongLineWarning

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
    with pytest.raises(rnmt.UserError, match=re.escape("option 'max_output_tokens' must be in [1, 65536]")):
        model.translate(["a"], max_output_tokens=0)
    with pytest.raises(rnmt.UserError, match="option 'normalize' must be one of gnmt, length, none"):
        model.translate(["a"], normalize="bogus")


def test_a_wide_beam_takes_fewer_sentences_per_batch_with_the_same_outputs(tiny_run, monkeypatch):
    from rnmt.data import translation
    from rnmt.search import translator as translator_module
    from rnmt_runtime import limits  # the bounds rnmt.search.limits takes from the torch-free rules

    model = rnmt.load(tiny_run, device="cpu")
    lines = ["Y dijo Dios.", "sea la luz", "y fue la luz", "y vio que era buena", "Dios"]
    whole = model.translate(lines, beam=4, nbest=2)
    batches = []

    def spy(sentences, max_tokens, max_sentences=None, **kw):
        for idx, src, mask in translation.make_translation_batches(sentences, max_tokens, max_sentences, **kw):
            batches.append(len(idx))
            yield idx, src, mask

    monkeypatch.setattr(translator_module, "make_translation_batches", spy)
    monkeypatch.setattr(limits, "MAX_SEARCH_ROWS", 8)  # two sentences of a beam of 4
    assert [[(h.text, h.score) for h in hyps] for hyps in model.translate(lines, beam=4, nbest=2)] == \
        [[(h.text, h.score) for h in hyps] for hyps in whole]
    assert batches == [2, 2, 1]
    batches.clear()
    model.translate(lines, greedy=True)  # one hypothesis a sentence: all in one batch
    assert batches == [5]
    batches.clear()
    # the scores' bound: rows for two beams of 4 over this model's target vocabulary
    monkeypatch.setattr(limits, "MAX_SEARCH_ROWS", 8192)
    monkeypatch.setattr(limits, "MAX_SEARCH_SCORES", 8 * len(model.loaded.tgt_vocab))
    assert [[(h.text, h.score) for h in hyps] for hyps in model.translate(lines, beam=4, nbest=2)] == \
        [[(h.text, h.score) for h in hyps] for hyps in whole]
    assert batches == [2, 2, 1]


def test_a_beam_too_wide_for_its_bound_is_one_line_before_the_model_loads(tiny_run, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Y dijo Dios.\n", encoding="utf-8")
    # a trillion hypotheses: refused by the bound (it was an out-of-memory error from inside the search)
    code = main(["translate", "--model", str(tiny_run), "--input", str(source), "--beam", str(10**12)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: --beam must be in [1, 8192], got 1000000000000")


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
    ("--max-output-tokens", "0", "--max-output-tokens must be in [1, 65536]"),
    ("--max-input-tokens", "1", "--max-input-tokens must be in [2, 2147483647]"),
    ("--alpha", "nan", "--alpha must be a finite number"),
    ("--max-len-ratio", "-1", "--max-len-ratio must be at least 0"),
    ("--coverage", "-0.2", "--coverage must be in [0, 10]"),
    ("--coverage", "inf", "--coverage must be a finite number"),
    ("--alpha", "1e300", "--alpha must be in [0, 10]"),  # was an OverflowError from the length penalty
    ("--coverage", "10.5", "--coverage must be in [0, 10]"),
])
def test_bad_translate_options_are_one_line(tiny_run, capsys, option, value, needle):
    assert main(["translate", "--model", str(tiny_run), option, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {needle}, got "), err
