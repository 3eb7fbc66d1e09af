"""benchmarks/coverage.py and benchmarks/no_repeat.py on a tiny model: one scored row per
value, the changed lines counted against the first value, the record says where it ran."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support import GENESIS_LINES, load_benchmark


@pytest.mark.parametrize("script, option, values, key", [("coverage", "--betas", "0,0.5", "coverage"),
                                                          ("no_repeat", "--ngrams", "0,1", "no_repeat_ngram")])
def test_a_sweep_scores_every_value(tiny_run, tmp_path, monkeypatch, capsys, script, option, values, key):
    src, ref = tmp_path / "src.es", tmp_path / "ref.en"
    src.write_text("\n".join(GENESIS_LINES[:4]) + "\n", encoding="utf-8")
    ref.write_text("And God said.\nLet there be light.\nAnd there was light.\nIt was good.\n", encoding="utf-8")
    out = tmp_path / "sweep.json"
    bench = load_benchmark(script)
    monkeypatch.setattr(sys, "argv", [f"{script}.py", "--model", str(tiny_run), "--src", str(src), "--ref", str(ref),
                                      option, values, "--beam", "3", "--json", str(out),
                                      "--outputs", str(tmp_path / "hyps")])
    bench.main()
    result = json.loads(out.read_text(encoding="utf-8"))
    first, second = result["settings"]
    assert [first[key], second[key]] == [type(first[key])(v) for v in values.split(",")]
    assert first["lines_changed"] is None and 0 <= second["lines_changed"] <= 4
    for row in (first, second):
        assert 0 <= row["bleu"] <= 100 and row["length_ratio"] >= 0 and "looping_lines" in row
    hyps = sorted(p.name for p in (tmp_path / "hyps").iterdir())
    assert len(hyps) == 2 and all(len(p.read_text(encoding="utf-8").splitlines()) == 4
                                  for p in (tmp_path / "hyps").iterdir())
    assert result["beam"] == 3 and result["commit"] and result["machine"]["threads"] == 1
    assert result["command"].startswith(f"python -m benchmarks.{script} --model ")
    changed = sum(a != b for a, b in zip(*(p.read_text(encoding="utf-8").splitlines()
                                            for p in sorted((tmp_path / "hyps").iterdir()))))
    assert changed == second["lines_changed"]
