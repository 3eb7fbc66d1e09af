"""``report.json`` and ``report.md``: teacher against students against baselines.

Per system (the teacher; each student config's student and baseline, per seed): BLEU and
chrF on the test set with the 95% interval of sacrebleu's paired bootstrap (`rnmt.evaluation
.significance`), sentences/s at beam 5 and greedy, parameters, checkpoint bytes and the
precision it was trained in (its run's ``plan.json``). Each student and baseline also has
``bleu_vs_teacher_output``: BLEU against the teacher's own test translations, how closely it
imitates the teacher. Per student config and seed, the paired bootstrap p-value of student
against baseline (BLEU; `difference_interval`, as `rnmt reproduce` computes its per-seed p)
and the interval of the student's BLEU minus the teacher's. The top-level ``student``,
``baseline`` and ``p_student_vs_baseline`` are the first student config's (its seeds' mean
scores and speeds; one p per seed); ``students`` holds every config's.

The targets of docs/distill.md are judged per student config: ``speedup`` (student over
teacher sentences/s at beam 5, target >= 3), ``bleu_gap`` (teacher minus student BLEU,
target <= 1.0) and ``beats_baseline_every_seed`` (student above baseline with p < 0.05 in every seed), and
``all_met`` when the three hold together; a missed target's line in ``report.md`` says by how much.

What limits a student (`rnmt.distill.measure`): every system's ``distilled_nll``, its
cross-entropy (nats per subword) of the teacher's outputs on the first distilled training
pairs, and ``output_layer_share``, the share of its parameters in the output layer over the
target vocabulary. ``report.md`` words them under a missed target: a student far above the
teacher's cross-entropy on pairs it trained on cannot reproduce its teacher (its size or
training limits the gap, not the distilled data); a large output-layer share is a cost every
search step pays whatever the recurrent network's size (the vocabulary limits the speed).
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence

SPEED_TARGET, GAP_TARGET, ALPHA = 3.0, 1.0, 0.05
FIGURES = ("bleu", "chrf", "sentences_per_s", "greedy_sentences_per_s", "parameters", "file_bytes")
MEANS = (*FIGURES, "bleu_vs_teacher_output", "distilled_nll", "output_layer_share")
# A student whose cross-entropy of the teacher's outputs, on pairs it trained on, exceeds the
# teacher's own by this factor is said not to reproduce its teacher.
IMITATION_FACTOR = 1.5
SHARES = ("distilled_nll", "output_layer_share")  # kept to 3 decimals


def system_scores(hyps: Dict[str, List[str]], refs: List[str], n_samples: int) -> Dict[str, dict]:
    """BLEU and chrF of every system with its paired-bootstrap 95% interval."""
    from rnmt.evaluation.significance import paired_bootstrap

    names = list(hyps)
    _, results = paired_bootstrap([(name, hyps[name]) for name in names], [refs], n_samples=n_samples)
    return {name: {metric: {"score": round(r.score, 2), "ci": [round(r.low, 2), round(r.high, 2)]}
                   for metric, r in results[name].items()} for name in names}


def compare_student(name: str, seeds: Sequence[int], hyps: Dict[str, List[str]], refs: List[str],
                    n_samples: int) -> Dict[str, Any]:
    """Per seed: p of student vs baseline (BLEU and chrF) and the BLEU interval of student minus teacher."""
    from rnmt.evaluation.significance import difference_interval

    per_seed: Dict[str, Any] = {}
    for seed in seeds:
        student = hyps[f"{name}.student.seed{seed}"]
        entry: Dict[str, Any] = {}
        base = hyps.get(f"{name}.baseline.seed{seed}")
        if base is not None:
            for metric in ("bleu", "chrf"):
                d = difference_interval(student, base, refs, metric=metric, n_samples=n_samples)
                entry[f"{metric}_vs_baseline"] = {"difference": round(d.observed, 2), "interval": d.as_list(),
                                                  "p": round(d.p_value, 4)}
        d = difference_interval(student, hyps["teacher"], refs, metric="bleu", n_samples=n_samples)
        entry["bleu_vs_teacher"] = {"difference": round(d.observed, 2), "interval": d.as_list(),
                                    "p": round(d.p_value, 4)}
        per_seed[str(seed)] = entry
    return per_seed


def fidelity(hyps: List[str], teacher_hyps: List[str]) -> float:
    """BLEU of a system's test translations against the teacher's: how closely it imitates
    the teacher (100 for the teacher itself), apart from how well either translates."""
    import sacrebleu

    return round(sacrebleu.corpus_bleu(hyps, [teacher_hyps]).score, 2)


def system_entry(measured: dict, scores: dict, extra: Optional[dict] = None) -> Dict[str, Any]:
    entry = {"bleu": scores["bleu"]["score"], "chrf": scores["chrf"]["score"], "bleu_ci": scores["bleu"]["ci"],
             "chrf_ci": scores["chrf"]["ci"], "sentences_per_s": round(measured["sentences_per_s"], 2),
             "greedy_sentences_per_s": round(measured["greedy_sentences_per_s"], 2),
             "parameters": measured["parameters"], "file_bytes": measured["file_bytes"],
             "training_precision": measured.get("training_precision", "unknown"), **(extra or {})}
    for key in ("distilled_nll", "output_layer_share"):
        if measured.get(key) is not None:
            entry[key] = round(measured[key], 3)
    return entry


def over_seeds(entries: Dict[str, dict]) -> Dict[str, Any]:
    """The seeds' mean of each figure, with the per-seed entries under ``seeds``."""
    mean = {key: round(statistics.mean(e[key] for e in entries.values()), 3 if key in SHARES else 2)
            for key in MEANS if all(key in e for e in entries.values())}
    return {**mean, "seeds": entries}


def judge(teacher: dict, student: dict, p_values: List[Optional[float]], diffs: List[Optional[float]]) -> dict:
    speedup = student["sentences_per_s"] / max(teacher["sentences_per_s"], 1e-9)
    gap = teacher["bleu"] - student["bleu"]
    beats = bool(p_values) and all(p is not None and p < ALPHA and d is not None and d > 0
                                   for p, d in zip(p_values, diffs))
    verdict = {"speedup": round(speedup, 2), "speedup_met": speedup >= SPEED_TARGET, "bleu_gap": round(gap, 2),
               "bleu_gap_met": gap <= GAP_TARGET, "beats_baseline_every_seed": beats}
    verdict["all_met"] = verdict["speedup_met"] and verdict["bleu_gap_met"] and beats
    return verdict


def build_report(names: Sequence[str], seeds: Sequence[int], measured: Dict[str, dict], refs: List[str],
                 n_samples: int, filter_counts: dict, extra: Dict[str, Any]) -> Dict[str, Any]:
    hyps = {key: m["hyps"] for key, m in measured.items()}
    scores = system_scores(hyps, refs, n_samples)
    teacher = system_entry(measured["teacher"], scores["teacher"])
    report: Dict[str, Any] = {**extra, "teacher": teacher, "filter": filter_counts, "students": {}}
    for name in names:
        roles: Dict[str, Dict[str, dict]] = {"student": {}, "baseline": {}}
        for role in roles:
            for seed in seeds:
                key = f"{name}.{role}.seed{seed}"
                if key in measured:
                    roles[role][str(seed)] = system_entry(
                        measured[key], scores[key],
                        {"run": measured[key]["run"], "bleu_vs_teacher_output": fidelity(hyps[key], hyps["teacher"])})
        comparison = compare_student(name, seeds, hyps, refs, n_samples)
        p_values = [comparison[str(s)].get("bleu_vs_baseline", {}).get("p") for s in seeds]
        diffs = [comparison[str(s)].get("bleu_vs_baseline", {}).get("difference") for s in seeds]
        student = over_seeds(roles["student"])
        entry = {"student": student, "baseline": over_seeds(roles["baseline"]) if roles["baseline"] else None,
                 "p_student_vs_baseline": p_values if roles["baseline"] else None, "per_seed": comparison,
                 "targets": judge(teacher, student, p_values, diffs)}
        report["students"][name] = entry
    first = report["students"][names[0]]
    report.update(student=first["student"], baseline=first["baseline"],
                  p_student_vs_baseline=first["p_student_vs_baseline"], headline_student=names[0])
    return report


def _ci(entry: dict, metric: str) -> str:
    low, high = entry.get(f"{metric}_ci", [None, None])
    return f"{entry[metric]:.2f}" + (f" [{low:.2f}, {high:.2f}]" if low is not None else "")


def _interval(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:+.2f}" for v in values) + "]"


def speed_target(t: dict) -> str:
    """The speed target's words for a student's ``targets``: the figure, the target and met or by how much not."""
    verdict = "met" if t["speedup_met"] else f"missed by {SPEED_TARGET - t['speedup']:.2f}x"
    return f"{t['speedup']:.2f}x the teacher's sentences/s at beam 5 (target >= {SPEED_TARGET:g}x: {verdict})"


def gap_target(t: dict) -> str:
    """The BLEU-gap target's words, as :func:`speed_target` gives the speed's."""
    verdict = "met" if t["bleu_gap_met"] else f"missed by {t['bleu_gap'] - GAP_TARGET:.2f} BLEU"
    return f"teacher minus student {t['bleu_gap']:.2f}, mean of seeds (target <= {GAP_TARGET:g}: {verdict})"


def gap_limit(teacher: dict, student: dict, baseline: Optional[dict]) -> Optional[str]:
    """What the cross-entropies on the distilled pairs say about a missed BLEU gap; None without them."""
    nll, own = student.get("distilled_nll"), teacher.get("distilled_nll")
    if nll is None or own is None:
        return None
    base = baseline.get("distilled_nll") if baseline else None
    figures = (f"on the first distilled training pairs its cross-entropy of the teacher's outputs is {nll:.3f} "
               f"nats per subword, the teacher's {own:.3f}" + (f", its baseline's {base:.3f}" if base is not None
                                                                else ""))
    if nll > IMITATION_FACTOR * own:
        return (f"{figures}: it does not reproduce its teacher even on pairs it trained on, so the student's size "
                f"(or its training) limits the gap, not the distilled data")
    return (f"{figures}: it reproduces its teacher on the pairs it trained on, so the gap lies in what the "
            f"teacher's outputs teach about new sentences (more or better distilled data: --nbest, an ensemble "
            f"teacher)")


def speed_limit(teacher: dict, student: dict) -> Optional[str]:
    """What the output layers' shares of the parameters say about a missed speed target; None without them."""
    share, own = student.get("output_layer_share"), teacher.get("output_layer_share")
    if share is None or own is None:
        return None
    return (f"the output layer over the target vocabulary holds {share:.0%} of the student's parameters "
            f"({own:.0%} of the teacher's); every search step pays for it, and for the choice among beam x vocabulary "
            f"candidates, whatever the recurrent network's size: a narrower network gains less speed than its "
            f"parameters suggest, a smaller target vocabulary more")


def _row(label: str, e: dict) -> str:
    imitation = e.get("bleu_vs_teacher_output")
    return (f"| {label} | {_ci(e, 'bleu')} | {_ci(e, 'chrf')} | {'-' if imitation is None else f'{imitation:.2f}'} | "
            f"{e['sentences_per_s']:.1f} | "
            f"{e['greedy_sentences_per_s']:.1f} | {e['parameters']:,} | {e['file_bytes'] / 1e6:.1f} | "
            f"{e.get('training_precision', 'unknown')} |")


def render_markdown(report: Dict[str, Any]) -> str:
    lines = ["# Distillation report", ""]
    prov = report.get("provenance", {})
    if prov:
        lines += [f"Commit {prov.get('commit')}, {prov.get('machine')}.", "", f"Command: `{prov.get('command')}`", ""]
    lines += [f"Test set: {report.get('test_sentences')} sentences ({report.get('test')}). BLEU and chrF with the "
              f"95% interval of a paired bootstrap ({report.get('bootstrap')} resamples); speeds in sentences/s on "
              f"{report.get('speed_threads')} CPU thread(s), the fastest of {report.get('speed_rounds')} alternating "
              f"rounds.", "",
              "| system | BLEU [95%] | chrF [95%] | BLEU to the teacher's output | sent/s beam 5 | sent/s greedy | "
              "parameters | MB | trained in |",
              "|---|---|---|---:|---:|---:|---:|---:|---|", _row("teacher", report["teacher"])]
    for name, s in report["students"].items():
        for role in ("student", "baseline"):
            if s[role] is None:
                continue
            for seed, e in s[role]["seeds"].items():
                lines.append(_row(f"{name} {role} seed {seed}", e))
    for name, s in report["students"].items():
        t = s["targets"]
        lines += ["", f"## {name}", "", f"- speed: {speed_target(t)}"]
        limit = None if t["speedup_met"] else speed_limit(report["teacher"], s["student"])
        lines += [f"  - what limits it: {limit}"] if limit else []
        lines.append(f"- BLEU: {gap_target(t)}")
        limit = None if t["bleu_gap_met"] else gap_limit(report["teacher"], s["student"], s["baseline"])
        lines += [f"  - what limits it: {limit}"] if limit else []
        for seed, c in s["per_seed"].items():
            vs_b = c.get("bleu_vs_baseline")
            b_text = (f"student - baseline BLEU {vs_b['difference']:+.2f} {_interval(vs_b['interval'])}, "
                      f"p {vs_b['p']:.4f}; " if vs_b else "")
            vs_t = c["bleu_vs_teacher"]
            lines.append(f"- seed {seed}: {b_text}student - teacher BLEU {vs_t['difference']:+.2f} "
                         f"{_interval(vs_t['interval'])}")
        if s["baseline"] is not None:
            lines.append(f"- beats the baseline significantly (p < {ALPHA}) in every seed: "
                         f"{'yes' if t['beats_baseline_every_seed'] else 'no'}")
    met = [name for name, s in report["students"].items() if s["targets"].get("all_met")]
    lines += ["", "## Targets together", "",
              (f"Every target met by: {', '.join(met)}." if met else
               "No student meets every target (speed, BLEU gap and the baseline in every seed) at once.")]
    f = report["filter"]
    lines += ["", "## Filtering", "", f"{f['pairs']:,} training pairs decoded by the teacher, {f['kept']:,} kept.", ""]
    lines += [f"- {reason.replace('_', ' ')}: {n:,} dropped" for reason, n in f["dropped"].items()]
    if f.get("teacher_score_threshold") is not None:
        lines.append(f"- teacher cross-entropy threshold: {f['teacher_score_threshold']} nats per subword")
    for note in report.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"
