"""How closely each student and baseline follows the teacher: cross-entropy per subword
under forced decoding, on the distilled training pairs, on the teacher's test translations
and on the test references (docs/distill.md, "The Bible measurement").

A student that cannot fit the teacher's outputs even on the pairs it trained on is limited by
its size; one that fits them but translates poorly is limited by its teacher. Every model
scores the same pairs (`rnmt.api` ``score``: one teacher-forced pass, the end of sentence
included); the figure is the corpus's summed negative log-probability over its subwords.

    python results/distill/imitation.py WORK/distill [--pairs 2000] [--out FILE]

WORK/distill: a distillation directory (``rnmt distill --out``) whose runs have finished;
the teacher's test translations are its report's ``hyp/teacher.txt``, or, before the report,
translated here at beam 5.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import torch

import rnmt
from rnmt.data import read_lines
from rnmt.reproduce.machine import describe_machine, machine_line


def nll_per_subword(model: rnmt.api.Model, src: List[str], tgt: List[str]) -> float:
    scores = model.score(src, tgt)
    return -sum(s.log_prob for s in scores) / sum(len(s.tokens) for s in scores)


def models_of(work: Path) -> Dict[str, Path]:
    manifest = json.loads((work / "distill.json").read_text(encoding="utf-8"))
    models = {"teacher": Path(manifest["teacher_checkpoints"][0])}
    for name in manifest["students"]:
        runs = work / "runs" / name
        for run in sorted(runs.iterdir()) if runs.is_dir() else []:
            if run.is_dir() and (work / "stages" / f"{name}.{run.name}.done").is_file():
                models[f"{name}.{run.name}"] = run
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--pairs", type=int, default=2000, help="distilled training pairs scored (the first N)")
    parser.add_argument("--out", type=Path, help="write the table here too")
    args = parser.parse_args()
    torch.set_num_threads(1)
    manifest = json.loads((args.work / "distill.json").read_text(encoding="utf-8"))
    src_lang, tgt_lang = manifest["teacher"]["pair"].split("-")
    first = next(iter(manifest["students"].values()))["sections"]["data"]["test"]
    test_src, test_ref = read_lines(f"{first}.{src_lang}"), read_lines(f"{first}.{tgt_lang}")
    dist_src = read_lines(args.work / "data" / f"distilled.{src_lang}")[: args.pairs]
    dist_tgt = read_lines(args.work / "data" / f"distilled.{tgt_lang}")[: args.pairs]
    models = models_of(args.work)
    teacher = rnmt.load(str(models["teacher"]), device="cpu")
    kept = args.work / "hyp" / "teacher.txt"
    teacher_out = read_lines(kept) if kept.is_file() else teacher.translate(test_src, beam=5)
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = ["# Cross-entropy per subword under forced decoding (results/distill/imitation.py)", "",
             f"Commit {commit}, {machine_line(describe_machine(torch.device('cpu'), 1))}.", "",
             f"Command: `python {' '.join(sys.argv)}` (paths as given).", "",
             f"The first {len(dist_src):,} distilled training pairs; the {len(test_src)} test sentences with the "
             f"teacher's beam-5 translations as targets; the same with the references. Nats per subword, end of "
             f"sentence included; lower is closer.", "",
             "| model | distilled training pairs | teacher's test translations | test references |",
             "|---|---:|---:|---:|"]
    for name, path in models.items():
        model = teacher if name == "teacher" else rnmt.load(str(path), device="cpu")
        row = [nll_per_subword(model, dist_src, dist_tgt), nll_per_subword(model, test_src, teacher_out),
               nll_per_subword(model, test_src, test_ref)]
        lines.append(f"| {name} | " + " | ".join(f"{x:.3f}" for x in row) + " |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
