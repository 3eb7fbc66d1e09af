"""Blocking repeated n-grams on a tiny trained run, through the Python interface and the
command line: the barely trained model loops, and with blocking no output repeats itself."""

from __future__ import annotations

import pytest

import rnmt
from tests.support import GENESIS_LINES, translate


def repeated(pieces, n):
    grams = [tuple(pieces[i:i + n]) for i in range(len(pieces) - n + 1)]
    return len(grams) != len(set(grams))


@pytest.mark.parametrize("options", [{"beam": 3}, {"greedy": True}, {"beam": 3, "nbest": 2},
                                     {"sample": True, "nbest": 2, "seed": 3},
                                     {"beam": 3, "prefix": ["And God", "", "And", "", ""]},
                                     {"beam": 3, "constraints": [["light"], [], [], [], ["night"]]}])
def test_no_output_repeats_an_ngram(tiny_run, options):
    model = rnmt.load(tiny_run, device="cpu")
    plain = model.translate(GENESIS_LINES, token_scores=True, **options)
    blocked = model.translate(GENESIS_LINES, token_scores=True, no_repeat_ngram=2, **options)
    per_line = lambda results: [r if isinstance(r, list) else [r] for r in results]  # noqa: E731
    if not options.get("sample"):  # the tiny model's searches loop (its samples need not)
        assert any(repeated(h.pieces[:-1], 2) for hyps in per_line(plain) for h in hyps)
    assert not any(repeated(h.pieces[:-1], 2) for hyps in per_line(blocked) for h in hyps)
    assert all(h.text == "" for hyps, line in zip(per_line(blocked), GENESIS_LINES) if not line for h in hyps)
    for hyps, prefix in zip(per_line(blocked), options.get("prefix", [])):
        assert all(h.text.startswith(prefix) for h in hyps)
    for hyps, phrases in zip(per_line(blocked), options.get("constraints", [])):
        assert all(phrase in h.text for h in hyps for phrase in phrases)


def test_the_command_line_option_blocks_and_is_checked(tiny_run, tmp_path, capsys):
    src = tmp_path / "in.es"
    src.write_text("\n".join(GENESIS_LINES) + "\n", encoding="utf-8")
    model = rnmt.load(tiny_run, device="cpu")
    expected = model.translate(GENESIS_LINES, beam=3, no_repeat_ngram=3)
    out = tmp_path / "out.en"
    assert translate("--model", tiny_run, "--input", src, "--output", out, "--beam", 3, "--no-repeat-ngram", 3) == 0
    assert out.read_text(encoding="utf-8").splitlines() == expected
    assert translate("--model", tiny_run, "--input", src, "--no-repeat-ngram", -1) == 2
    assert "--no-repeat-ngram must be in [0, 32], got -1" in capsys.readouterr().err


def test_a_bad_value_is_a_user_error(tiny_run):
    model = rnmt.load(tiny_run, device="cpu")
    with pytest.raises(rnmt.UserError, match="no_repeat_ngram"):
        model.translate("Hola.", no_repeat_ngram=-2)
    with pytest.raises(rnmt.UserError, match="no_repeat_ngram"):
        model.translate("Hola.", no_repeat_ngram="two")


def test_an_ensemble_blocks_like_its_members(tiny_run):
    single = rnmt.load(tiny_run, device="cpu")
    pair = rnmt.load([tiny_run, tiny_run], device="cpu")  # averaging a model with itself changes nothing
    assert (pair.translate(GENESIS_LINES, beam=3, no_repeat_ngram=2)
            == single.translate(GENESIS_LINES, beam=3, no_repeat_ngram=2))
