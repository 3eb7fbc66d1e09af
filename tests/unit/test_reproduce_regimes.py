"""The converged README's "Both regimes" section: each claim's verdict after equal updates
beside its verdict at convergence."""

from rnmt.reproduce.regimes import differences, learning_speed_claims, regimes_section, verdict
from tests.support import REPO


def claim(kind, a, b, status, diffs=None, ci=None, steps=(2000, 2000)):
    runs = [{"a": {"seed": 1, "steps": steps[0]}, "b": {"seed": 1, "steps": steps[1]}}]
    return {"kind": kind, "a": a, "b": b, "text": f"{a} beats {b}", "status": status,
            "differences": diffs, "ci": ci, "runs": runs}


def test_claims_are_matched_by_kind_and_systems():
    equal = [claim("better", "dtmt4", "dtmt1", "reversed", [-7.36], [[-8.39, -6.22]]),
             claim("better", "dtmt1", "shallow", "held", [0.8], [[0.2, 1.4]])]
    converged = [claim("better", "dtmt4", "dtmt1", "undecided: not significant in every seed (p 0.2)",
                       [0.31], [[-0.4, 1.0]], steps=(12500, 9000)),
                 claim("about", "dtmt1", "shallow", "held: at most 0.5 BLEU worse in every seed")]
    lines = regimes_section("dtmt", equal, converged)
    rows = [line for line in lines if line.startswith("| dtmt")]
    assert rows[0] == ("| dtmt4 beats dtmt1 | reversed | -7.36 [-8.39, -6.22] | undecided: not significant in "
                       "every seed | +0.31 [-0.40, +1.00] | 12500 / 9000 |")
    # the same systems under another kind of claim are a different claim
    assert rows[1].startswith("| dtmt1 beats shallow | not in that table | - | held: at most 0.5 BLEU worse")
    assert "`results/dtmt/`" in "\n".join(lines)


def test_long_reasons_are_cut_and_speed_claims_have_no_bleu_difference():
    assert verdict({"status": "undecided: fails the sanity check (dtmt4 seed 1: loops ...)"}) == \
        "undecided: fails the sanity check"
    assert differences({"kind": "faster", "ci": [[1.1, 1.3]], "differences": [1.2]}) == "-"


def test_the_learning_speed_table_is_found_beside_the_converged_one():
    claims = learning_speed_claims(REPO / "results" / "dtmt-converged")
    assert claims and any(c["a"] == "dtmt4" and c["b"] == "dtmt1" for c in claims)
    assert learning_speed_claims(REPO / "results" / "dtmt") is None  # not a converged directory
    assert learning_speed_claims(REPO / "results" / "nonesuch-converged") is None


def test_updates_after_the_lowest_dev_loss_come_from_the_learning_curve():
    from rnmt.reproduce.report import updates_after_lowest_loss

    curve = [{"step": 500, "dev_loss": 3.0}, {"step": 1000, "dev_loss": 2.5}, {"step": 1500, "dev_loss": 2.5},
             {"step": 2000, "dev_loss": 2.6}]
    assert updates_after_lowest_loss({"steps": 2000, "validations": curve}) == 1000  # the first of equals
    assert updates_after_lowest_loss({"steps": 1000, "validations": curve[:2]}) == 0  # still falling at the stop
    assert updates_after_lowest_loss({"steps": 2000}) is None


def test_the_training_line_names_the_records_that_stopped_under_an_earlier_patience():
    from rnmt.reproduce.report import _training_line, record_patience

    settings = {"dev_sentences": 0, "converge": True, "patience": 8, "updates": 30000, "validate_every": 500,
                "plateau_patience": 2}
    under = lambda run, p: {"run": run, "recipe": {"train.patience": p}}  # noqa: E731
    assert record_patience(under("a.seed1", 4)) == 4 and record_patience({"run": "x"}) is None
    same = _training_line(settings, [under("a.seed1", 8), under("b.seed1", 8)])
    assert "not improved for 8 validations" in same and "stopped under" not in same
    mixed = _training_line(settings, [under("b.seed1", 4), under("a.seed2", 8), under("a.seed1", 4)])
    # the line opens with the rule each record stopped under, not the settings' patience alone
    assert ("until dev BLEU has not improved for 4 validations in a row for the records of a.seed1, b.seed1; "
            "8 validations in a row for the records of a.seed2") in mixed
    assert "the records under 4 stopped before the table's patience was raised to 8" in mixed
    every = _training_line(settings, [under("b.seed1", 4), under("a.seed1", 4)])
    assert every.startswith("- **Training**: until dev BLEU has not improved for 4 validations in a row (early")
    assert "raised to 8" in every and "8 validations" not in every
