"""Corpus metrics against the sacrebleu console script, and reading hypothesis and reference
files: rnmt's numbers are sacrebleu's numbers."""

from __future__ import annotations

import pytest

from rnmt.errors import UserError
from rnmt.evaluation.metrics import corpus_bleu, corpus_chrf, read_systems_and_references
from rnmt.evaluation.textfiles import read_lines
from tests.evaluate_support import FIXTURES, run_sacrebleu

BASE = FIXTURES / "hyp_base.txt"
REF = FIXTURES / "ref.txt"
REF2 = FIXTURES / "ref2.txt"


def _systems(hyp=BASE, refs=(REF,)):
    systems, references = read_systems_and_references([hyp], list(refs))
    return systems[str(hyp)], references


@pytest.mark.parametrize("extra, tokenize, lowercase, refs", [
    ([], "13a", False, (REF,)),
    (["--tokenize", "none"], "none", False, (REF,)),
    (["-lc", "--tokenize", "intl"], "intl", True, (REF, REF2)),
    (["--tokenize", "char"], "char", False, (REF, REF2)),
])
def test_bleu_matches_sacrebleu_console_script_to_six_digits(extra, tokenize, lowercase, refs):
    hyps, references = _systems(refs=refs)
    ours = corpus_bleu(hyps, references, tokenize=tokenize, lowercase=lowercase)
    theirs = run_sacrebleu([*map(str, refs), "-i", str(BASE), "-m", "bleu", "-b", "-w", "6",
                            *extra]).strip()
    assert f"{ours.score:.6f}" == theirs
    assert f"tok:{tokenize}" in ours.signature
    assert f"nrefs:{len(refs)}" in ours.signature


def test_chrf_matches_sacrebleu_console_script():
    hyps, references = _systems()
    theirs = run_sacrebleu([str(REF), "-i", str(BASE), "-m", "chrf", "-b", "-w", "6"]).strip()
    assert f"{corpus_chrf(hyps, references).score:.6f}" == theirs


def test_missing_file_error_names_the_file(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(UserError, match="nope.txt: no such file"):
        read_systems_and_references([missing], [REF])


def test_unequal_line_counts_name_both_files_and_counts(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    with pytest.raises(UserError) as err:
        read_systems_and_references([short], [REF])
    message = str(err.value)
    assert "short.txt has 1 lines" in message and "ref.txt has 30" in message


def test_unequal_reference_line_counts_are_rejected(tmp_path):
    short = tmp_path / "ref_short.txt"
    short.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(UserError, match="ref_short.txt has 2"):
        read_systems_and_references([BASE], [REF, short])


def test_invalid_utf8_error_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\nbroken \xff byte\n")
    with pytest.raises(UserError, match=r"bad.txt:3: not valid UTF-8"):
        read_lines(bad)


def test_lines_split_on_newline_only_and_lose_trailing_space(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes("a b  \r\nc\u2028d\nlast".encode("utf-8"))
    assert read_lines(path) == ["a b", "c\u2028d", "last"]


def test_empty_reference_file_is_rejected(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="empty reference"):
        read_systems_and_references([empty], [empty])
