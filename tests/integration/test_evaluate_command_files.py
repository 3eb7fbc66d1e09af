"""``rnmt evaluate`` on files: plain reports against the sacrebleu console script, paired
bootstrap, BLEU by source length written to a directory."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from rnmt.commands import evaluate
from rnmt.errors import UserError
from rnmt.evaluation.metrics import corpus_bleu, read_systems_and_references
from tests.evaluate_support import FIXTURES, run_command, run_sacrebleu

BASE = str(FIXTURES / "hyp_base.txt")
BETTER = str(FIXTURES / "hyp_better.txt")
REF = str(FIXTURES / "ref.txt")
SRC = str(FIXTURES / "src.txt")


def _json(capsys, *argv):
    assert run_command(evaluate, argv) == 0
    return json.loads(capsys.readouterr().out)


def test_plain_output_has_one_line_per_system_with_signatures(capsys):
    assert run_command(evaluate, ["--hyp", BASE, "--hyp", BETTER, "--ref", REF,
                                  "--width", "6"]) == 0
    lines = capsys.readouterr().out.splitlines()
    theirs = run_sacrebleu([REF, "-i", BASE, "-m", "bleu", "-b", "-w", "6"]).strip()
    assert lines[0].startswith(BASE) and f"BLEU {theirs}" in lines[0] and "chrF2" in lines[0]
    assert lines[1].startswith(BETTER)
    assert lines[2].startswith("signature BLEU: nrefs:1|case:mixed|eff:no|tok:13a")
    assert lines[3].startswith("signature chrF2: nrefs:1")


def test_json_bleu_matches_sacrebleu_console_script(capsys):
    report = _json(capsys, "--hyp", BETTER, "--ref", REF, "--tokenize", "none", "--lowercase",
                   "--json")
    theirs = run_sacrebleu([REF, "-i", BETTER, "-m", "bleu", "-b", "-w", "6",
                            "--tokenize", "none", "-lc"]).strip()
    assert f"{report['bleu']:.6f}" == theirs


def _bootstrap(capsys, tmp_path, seed="12345", samples="200"):
    copy = tmp_path / "copy_of_base.txt"
    shutil.copy(BASE, copy)
    return _json(capsys, "--hyp", BASE, "--hyp", BETTER, "--hyp", str(copy), "--ref", REF,
                 "--json", "--bootstrap", samples, "--seed", seed)


def test_bootstrap_gives_identical_system_p_one_and_better_system_small_p(capsys, tmp_path):
    report = _bootstrap(capsys, tmp_path)
    base, better, copy = report["systems"]
    for key in ("bleu", "chrf"):
        assert base["bootstrap"][key]["p_value"] is None  # the baseline is not tested
        assert copy["bootstrap"][key]["p_value"] == 1.0
        # 200 samples: sacrebleu's smallest possible p-value is 1 / 201.
        assert better["bootstrap"][key]["p_value"] == pytest.approx(1 / 201)
        ci = better["bootstrap"][key]
        assert ci["low"] <= ci["mean"] <= ci["high"]
        assert ci["high"] - ci["low"] == pytest.approx(2 * ci["ci"])
    assert report["bootstrap"] == {"samples": 200, "seed": 12345, "baseline": BASE}
    assert "bs:200|seed:12345" in report["signatures"]["bleu"]


def test_bootstrap_of_nearly_identical_system_is_not_significant(capsys, tmp_path):
    lines = open(BASE, encoding="utf-8").read().splitlines()
    lines[0] = open(BETTER, encoding="utf-8").read().splitlines()[0]
    near = tmp_path / "near.txt"
    near.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = _json(capsys, "--hyp", BASE, "--hyp", str(near), "--ref", REF, "--json",
                   "--bootstrap", "200")
    assert report["systems"][1]["bootstrap"]["bleu"]["p_value"] > 0.05


def test_bootstrap_is_reproducible_with_a_fixed_seed(capsys, tmp_path):
    first = _bootstrap(capsys, tmp_path, seed="7")
    again = _bootstrap(capsys, tmp_path, seed="7")
    other = _bootstrap(capsys, tmp_path, seed="8")
    assert first["systems"] == again["systems"]
    assert first["systems"][0]["bootstrap"] != other["systems"][0]["bootstrap"]


def test_bootstrap_matches_sacrebleu_paired_bs(capsys):
    report = _json(capsys, "--hyp", BASE, "--hyp", BETTER, "--ref", REF, "--json",
                   "--bootstrap", "1000")
    table = run_sacrebleu([REF, "-i", BASE, BETTER, "-m", "bleu", "--paired-bs",
                           "-w", "2", "-f", "text"])
    for system in report["systems"]:
        b = system["bootstrap"]["bleu"]
        assert f"{system['bleu']:.2f} ({b['mean']:.2f} ± {b['ci']:.2f})" in table
    assert f"(p = {report['systems'][1]['bootstrap']['bleu']['p_value']:.4f})" in table


def test_by_length_writes_tables_and_plots_and_prints_the_table(capsys, tmp_path):
    out = tmp_path / "report"
    assert run_command(evaluate, ["--hyp", BASE, "--hyp", BETTER, "--ref", REF,
                                  "--by-length", SRC, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    names = ["by_length.tsv", "by_length.md", "by_length_disjoint.png",
             "by_length_longer_than.png"]
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    for png in names[2:]:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Every fixture source line is non-empty, so ">0" is the whole test set.
    systems, refs = read_systems_and_references([BASE], [REF])
    whole = f"{corpus_bleu(systems[BASE], refs).score:.2f}"
    assert re.search(rf"\| >0 \| 30 \| {re.escape(whole)} \|", printed)
    tsv = (out / "by_length.tsv").read_text(encoding="utf-8").splitlines()
    assert tsv[0] == f"form\tbucket\tsentences\t{BASE}\t{BETTER}"
    assert tsv[1].startswith("disjoint\t1-10\t6\t")


def test_by_length_source_with_wrong_line_count_is_rejected(tmp_path):
    with pytest.raises(UserError, match="lengths_src.txt has 7 lines"):
        run_command(evaluate, ["--hyp", BASE, "--ref", REF, "--by-length",
                               str(FIXTURES / "lengths_src.txt"), "--out", str(tmp_path)])


def test_repetition_reports_loops_of_each_system_and_of_the_reference(capsys, tmp_path):
    looping = tmp_path / "looping.txt"
    lines = open(BASE, encoding="utf-8").read().splitlines()
    lines[0] = "his own own own own own own own"  # 5 repeated 4-grams of 5, the line a loop
    looping.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    report = _json(capsys, "--hyp", BASE, "--hyp", str(looping), "--ref", REF, "--repetition", "--json")
    base, loops = (s["repetition"] for s in report["systems"])
    assert loops["looping_lines"] == base["looping_lines"] + 1
    assert loops["repeated_ngram_rate"] > base["repeated_ngram_rate"]
    assert report["reference_repetition"]["lines"] == len(lines)
    assert run_command(evaluate, ["--hyp", str(looping), "--ref", REF, "--repetition"]) == 0
    out = capsys.readouterr().out
    assert f"repetition {looping}: looping lines {loops['looping_lines']} of {len(lines)}" in out
    assert f"repetition reference {REF}: looping lines" in out
    assert "repetition" not in _json(capsys, "--hyp", BASE, "--ref", REF, "--json")["systems"][0]


def test_sentence_scores_are_sacrebleus_per_line(capsys, tmp_path):
    import sacrebleu

    out = tmp_path / "lines.tsv"
    assert run_command(evaluate, ["--hyp", BASE, "--hyp", BETTER, "--ref", REF, "--sentences", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    header, *rows = out.read_text(encoding="utf-8").splitlines()
    assert header == f"line\t{BASE} bleu\t{BASE} chrf\t{BETTER} bleu\t{BETTER} chrf"
    refs = open(REF, encoding="utf-8").read().splitlines()
    hyps = [open(p, encoding="utf-8").read().splitlines() for p in (BASE, BETTER)]
    assert len(rows) == len(refs)
    for i, row in enumerate(rows):
        cells = row.split("\t")
        assert cells[0] == str(i + 1)
        expected = [score(h[i], [refs[i]]).score for h in hyps for score in (sacrebleu.sentence_bleu,
                                                                             sacrebleu.sentence_chrf)]
        assert [float(c) for c in cells[1:]] == pytest.approx(expected, abs=1e-4)
    report = _json(capsys, "--hyp", BASE, "--ref", REF, "--sentences", str(tmp_path / "one.tsv"), "--json")
    assert report["files"] == [str(tmp_path / "one.tsv")]
