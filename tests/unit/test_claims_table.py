"""README.md's table of the papers' claims is the one results/claims_table.py writes from
the committed results.json files, and that script words each verdict from its record."""

from __future__ import annotations

from tests.support import REPO, load_results_script


def test_the_readme_holds_exactly_the_table_of_the_records():
    table = load_results_script("claims_table")
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(table.HEADER[0])
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    assert lines[start:end] == table.rows(), "README's claims table differs: run python results/claims_table.py"


def test_a_verdict_says_why_from_its_record():
    table = load_results_script("claims_table")
    labels = {"dtmt4": "DTMT#4", "seq2seq": "Seq2seq"}
    loops = {"status": "undecided: fails the sanity check (dtmt4 seed 1: loops: 6.81% repeated 4-grams; "
                       "seq2seq seed 2: BLEU 7.06 < 10)", "ci": [[-1, 1], [-1, 1]], "kind": "better"}
    assert table.verdict(loops, labels, False) == "undecided (DTMT#4 loops, Seq2seq below 10 BLEU)"
    one = {"status": "reversed", "ci": [[-2.0, -0.3]], "kind": "better"}
    assert table.verdict(one, labels, True) == "reversed (one seed, mixed regime)"
    fast = {"status": "held (1.46x, rounds 1.47 / 1.46 / 1.44)", "ci": [[1.44, 1.47]], "kind": "faster"}
    assert table.verdict(fast, labels, False) == "held (1.46x)" and table.difference(fast) == ""
    assert table.verdict({"status": "not run"}, labels, False) == ""
    both = {"status": "held", "ci": [[0.1, 1.5], [0.2, 1.9]], "differences": [0.8, 1.05], "kind": "better"}
    assert table.difference(both) == "+0.80 [+0.10, +1.50] / +1.05 [+0.20, +1.90]"
    assert table.claim_text("ATR translates about as well as GRU (21.99 vs 22.06) with fewer parameters (67.8M)") \
        == "ATR translates about as well as GRU"
