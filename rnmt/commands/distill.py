"""rnmt distill --teacher RUN [--teacher RUN ...] --student CONFIG [...] --out DIR: sequence-level
knowledge distillation, resumable stage by stage (`rnmt.distill`; docs/distill.md).

Run the same command again after a kill, a crash or Ctrl-C: finished chunks of the teacher's
decoding and finished training runs are kept, and the distillation continues where it stopped.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from rnmt.distill.options import DistillOptions


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DistillOptions()
    p.add_argument("--teacher", action="append", metavar="RUN",
                   help="teacher run directory or checkpoint; repeat for an ensemble")
    p.add_argument("--student", action="append", metavar="CONFIG",
                   help="student YAML config (its data section names the training, dev and test data); repeat for "
                        "several students of one distilled corpus (the first is the report's headline)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the distillation's directory (new, or this one to resume)")
    p.add_argument("--status", action="store_true",
                   help="say where the distillation in --out stands (decoding, each run, the report) and exit; "
                        "decodes and trains nothing")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="config override for every student and baseline run, e.g. train.max_steps=2000")
    p.add_argument("--seeds", type=int, nargs="+", default=d.seeds, help="a student and a baseline per seed")
    p.add_argument("--beam", type=int, default=d.beam, help="the teacher's beam over the training sources")
    p.add_argument("--nbest", type=int, default=d.nbest,
                   help="keep, of the teacher's N best, the one with the best chrF against the reference")
    p.add_argument("--chunk-lines", type=int, default=d.chunk_lines, help="source lines per decoding chunk")
    p.add_argument("--max-lines", type=int, help="distil only the first N training pairs (a short check)")
    p.add_argument("--min-ratio", type=float, default=d.min_ratio, help="lowest target/source word ratio kept")
    p.add_argument("--max-ratio", type=float, default=d.max_ratio, help="highest target/source word ratio kept")
    p.add_argument("--drop-worst", type=float, default=d.drop_worst, metavar="PERCENT",
                   help="drop this percentage of pairs with the teacher's highest cross-entropy")
    p.add_argument("--mix-original", type=float, default=d.mix_original, metavar="WEIGHT",
                   help="train students on the original corpus too, at this weight (0: distilled data only)")
    p.add_argument("--finetune-steps", type=int, default=d.finetune_steps,
                   help="then fine-tune each student on the original data for N updates (--init-from)")
    p.add_argument("--finetune-lr", type=float, default=d.finetune_lr, metavar="LR",
                   help="the fine-tuning's learning rate (default: the student config's train.lr)")
    p.add_argument("--no-baseline", dest="baseline", action="store_false",
                   help="do not train the students' configs on the original data for comparison")
    p.add_argument("--int8", action="store_true", help="export int8 students (where rnmt export exists)")
    p.add_argument("--shortlist", action="store_true",
                   help="build DIR/shortlist.json (rnmt shortlist) from the distilled pairs and export the students "
                        "with --shortlists, so that they translate with it in rnmt and in the runtime")
    p.add_argument("--threads", type=int, default=d.threads, help="CPU threads of the teacher's decoding")
    p.add_argument("--jobs", type=int, default=d.jobs,
                   help="train up to N student and baseline runs side by side, each in its own process (its "
                        "output in DIR/runs/NAME/KEY.log; give each run's config train.threads 1)")
    p.add_argument("--speed-threads", type=int, default=d.speed_threads, help="CPU threads of the report's timing")
    p.add_argument("--speed-rounds", type=int, default=d.speed_rounds, help="alternating timing rounds")
    p.add_argument("--bootstrap", type=int, default=d.bootstrap, help="paired bootstrap resamples")
    p.add_argument("--device", default=d.device, help="device of the teacher's decoding: cpu, cuda, auto")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import distill
    from rnmt.distill.students import TrainingStopped
    from rnmt.errors import UserError

    if args.status:
        from pathlib import Path

        from rnmt.distill.status import distill_status

        print("\n".join(distill_status(Path(args.out))))
        return 0
    for flag in ("teacher", "student"):
        if not getattr(args, flag):
            raise UserError(f"rnmt distill needs --{flag} (or --status, to see where --out stands)")

    options = {name: getattr(args, name) for name in
               ("beam", "nbest", "chunk_lines", "max_lines", "min_ratio", "max_ratio", "drop_worst", "mix_original",
                "finetune_steps", "finetune_lr", "seeds", "baseline", "overrides", "int8", "shortlist", "threads",
                "jobs",
                "speed_threads", "speed_rounds", "bootstrap", "device")}
    try:
        report = distill(args.teacher, args.student, args.out, command=shlex.join(["rnmt", *sys.argv[1:]]),
                         **options)
    except TrainingStopped as stopped:  # exit as the signal would, as rnmt train does
        print(f"stopped: {stopped}", file=sys.stderr, flush=True)
        return stopped.exit_code
    head = report["students"][report["headline_student"]]["targets"]
    print(f"teacher BLEU {report['teacher']['bleu']:.2f}, {report['teacher']['sentences_per_s']:.1f} sent/s; "
          f"student BLEU {report['student']['bleu']:.2f}, {report['student']['sentences_per_s']:.1f} sent/s "
          f"({head['speedup']:.2f}x); report: {args.out}/report.md")
    return 0
