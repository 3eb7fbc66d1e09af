"""The distillation report (rnmt.distill.report): its keys, the per-seed p and the targets."""

from __future__ import annotations

import json

from rnmt.distill.report import build_report, judge, render_markdown
from tests.support import SAMPLE

REFS = (SAMPLE / "test.en").read_text(encoding="utf-8").splitlines()[:60]


def _damaged(lines, every):
    """The references with every ``every``-th line cut to its first two words."""
    return [" ".join(line.split()[:2]) if i % every == 0 else line for i, line in enumerate(lines)]


def _measured(hyps, speed):
    return {"hyps": hyps, "sentences_per_s": speed, "greedy_sentences_per_s": 2 * speed, "parameters": 1000,
            "file_bytes": 4000, "run": "runs/x"}


def _report(student_every, baseline_every):
    measured = {"teacher": _measured(_damaged(REFS, 7), 10.0)}
    for seed in (1, 2):
        measured[f"gru.student.seed{seed}"] = _measured(_damaged(REFS, student_every), 40.0)
        measured[f"gru.baseline.seed{seed}"] = _measured(_damaged(REFS, baseline_every), 40.0)
    extra = {"test": "test", "test_sentences": len(REFS), "bootstrap": 200, "speed_threads": 1, "speed_rounds": 1}
    filt = {"pairs": 10, "kept": 8, "dropped": {"empty": 1, "looping": 1, "length_ratio": 0, "teacher_score": 0},
            "teacher_score_threshold": 2.0}
    return build_report(["gru"], [1, 2], measured, REFS, 200, filt, extra)


def test_report_keys_and_one_p_per_seed():
    report = _report(student_every=6, baseline_every=2)
    for key in ("teacher", "student", "baseline"):
        for figure in ("bleu", "chrf", "sentences_per_s", "greedy_sentences_per_s", "parameters", "file_bytes"):
            assert isinstance(report[key][figure], (int, float)), (key, figure)
    assert len(report["p_student_vs_baseline"]) == 2
    assert all(p < 0.05 for p in report["p_student_vs_baseline"])  # far fewer damaged lines than the baseline
    targets = report["students"]["gru"]["targets"]
    assert targets["speedup"] == 4.0 and targets["speedup_met"]
    assert targets["beats_baseline_every_seed"]
    assert report["filter"]["kept"] == 8
    json.dumps(report)  # serialisable as it stands
    text = render_markdown(report)
    assert "| teacher |" in text and "gru student seed 2" in text and "looping: 1 dropped" in text


def test_a_student_no_better_than_its_baseline_misses_the_target():
    report = _report(student_every=2, baseline_every=2)
    assert report["p_student_vs_baseline"] == [1.0, 1.0]  # identical outputs
    assert not report["students"]["gru"]["targets"]["beats_baseline_every_seed"]


def test_judge_reads_the_gap_and_speed_against_the_targets():
    teacher = {"bleu": 30.0, "sentences_per_s": 10.0}
    met = judge(teacher, {"bleu": 29.2, "sentences_per_s": 31.0}, [0.01], [1.0])
    assert met["bleu_gap_met"] and met["speedup_met"] and met["beats_baseline_every_seed"]
    missed = judge(teacher, {"bleu": 28.5, "sentences_per_s": 25.0}, [0.01, 0.2], [1.0, 0.5])
    assert missed["bleu_gap"] == 1.5 and not missed["bleu_gap_met"]
    assert missed["speedup"] == 2.5 and not missed["speedup_met"] and not missed["beats_baseline_every_seed"]


def test_the_markdown_says_by_how_much_a_target_is_missed():
    report = _report(student_every=6, baseline_every=2)
    targets = report["students"]["gru"]["targets"]
    text = render_markdown(report)
    assert "target >= 3x: met" in text and targets["all_met"] == targets["bleu_gap_met"]
    report["students"]["gru"]["targets"].update(speedup=2.4, speedup_met=False, all_met=False)
    text = render_markdown(report)
    assert "target >= 3x: missed by 0.60x" in text
    assert "No student meets every target" in text
    assert "[0." not in text  # intervals are written with signs and two decimals


def test_imitation_of_the_teacher_is_bleu_against_its_outputs():
    report = _report(student_every=6, baseline_every=2)
    gru = report["students"]["gru"]
    # the teacher damages every 7th line: the student (every 6th) shares more of its lines than the baseline
    student, baseline = gru["student"]["bleu_vs_teacher_output"], gru["baseline"]["bleu_vs_teacher_output"]
    assert 0 < baseline < student < 100
    assert gru["student"]["seeds"]["1"]["bleu_vs_teacher_output"] == student
    assert f"| {student:.2f} |" in render_markdown(report)


def _with_limits(report, teacher_nll, student_nll, student_share=0.44, teacher_share=0.31):
    report["teacher"].update(distilled_nll=teacher_nll, output_layer_share=teacher_share)
    report["students"]["gru"]["student"].update(distilled_nll=student_nll, output_layer_share=student_share)
    report["students"]["gru"]["baseline"].update(distilled_nll=1.1)
    report["students"]["gru"]["targets"].update(speedup=2.9, speedup_met=False, bleu_gap=2.0, bleu_gap_met=False)
    return render_markdown(report)


def test_the_markdown_says_what_limits_a_missed_target():
    report = _report(student_every=6, baseline_every=2)
    text = _with_limits(report, teacher_nll=0.29, student_nll=0.9)
    assert "its cross-entropy of the teacher's outputs is 0.900 nats per subword, the teacher's 0.290" in text
    assert "does not reproduce its teacher even on pairs it trained on" in text and "baseline's 1.100" in text
    assert "holds 44% of the student's parameters (31% of the teacher's)" in text
    text = _with_limits(report, teacher_nll=0.29, student_nll=0.35)
    assert "it reproduces its teacher on the pairs it trained on" in text
    report["students"]["gru"]["targets"].update(speedup_met=True, bleu_gap_met=True)
    assert "what limits it" not in render_markdown(report)  # only under a missed target


def test_the_limits_figures_are_kept_per_system_and_averaged_over_seeds():
    measured = {"teacher": {**_measured(REFS, 10.0), "distilled_nll": 0.3, "output_layer_share": 0.3}}
    for seed, nll in ((1, 0.8), (2, 1.0)):
        measured[f"gru.student.seed{seed}"] = {**_measured(REFS, 40.0), "distilled_nll": nll, "output_layer_share": 0.4}
    report = build_report(["gru"], [1, 2], measured, REFS, 50, {"pairs": 1, "kept": 1, "dropped": {}}, {})
    assert report["teacher"]["distilled_nll"] == 0.3
    assert report["student"]["distilled_nll"] == 0.9 and report["student"]["seeds"]["2"]["distilled_nll"] == 1.0
    assert report["student"]["output_layer_share"] == 0.4
