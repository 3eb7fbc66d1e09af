"""rnmt reproduce PAPER [--converge] [--updates N] [--seeds 1,2] [--jobs N] [--data DIR] [--dims E,H]
[--systems a,b] [--set ...]

Trains every system of a paper's main tables at a reduced size for the same number of
updates, under the paper's family recipe, decodes the test set with the paper's beam settings and writes
``results/<paper>/README.md``. Finished systems are skipped and stopped ones resumed, so
the command can be run again until everything is done. ``--converge`` trains each system
until dev BLEU stops improving instead (``results/<paper>-converged/``). See docs/reproduce.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rnmt.commands import checks
from rnmt.config import SEED
from rnmt.device import check_threads
from rnmt.errors import UserError
from rnmt.evaluation.significance import MAX_BOOTSTRAP

# The papers, 'all' of them, and rnmt's own protocols run the same way (bf16: precision parity).
PAPER_CHOICES = ("atr", "cseq2seq", "dtmt", "survey", "all", "bf16")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paper", choices=PAPER_CHOICES,
                   help="whose tables to reproduce; 'all' runs atr, cseq2seq, dtmt, survey in that order (with "
                        "--converge the three with a converged table); 'bf16' trains RNNSearch-GRU and DTMT#4 in "
                        "fp32 and bf16 (docs/performance.md)")
    p.add_argument("--updates", type=int, metavar="N",
                   help="training updates of every system (default 2000): the papers compare at equal updates; "
                        "with --converge the cap on each run's updates (default 30000)")
    p.add_argument("--converge", action="store_true",
                   help="train every system until dev BLEU has not improved for --patience validations, the "
                        "learning rate halving on each plateau; results go to results/<paper>-converged/")
    p.add_argument("--patience", type=int, default=8, metavar="N",
                   help="--converge: validations without dev BLEU improvement that end a run (default 8; "
                        "raising it on a table continues the runs it ended sooner)")
    p.add_argument("--plateau-patience", type=int, default=2, metavar="N",
                   help="--converge: validations without improvement before the rate decays (default 2)")
    p.add_argument("--seeds", default="1,2", metavar="S,S,...",
                   help="training seeds: all of them for the systems the paper's claims rest on, the first for "
                        "the others (default 1,2)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="runs trained side by side, each in its own process (default 1); with 2 cores, "
                        "--jobs 2 --threads 1 uses the machine best")
    p.add_argument("--data", metavar="DIR",
                   help="directory with train/dev/test.{SRC,TGT} (default ../shared/data/bible-es-en next to "
                        "the repository, else the bundled data/sample)")
    p.add_argument("--src", help="source language suffix (default: from the directory name, e.g. es)")
    p.add_argument("--tgt", help="target language suffix (default: from the directory name, e.g. en)")
    p.add_argument("--dims", default="256,256", metavar="E,H", help="embedding and hidden size (default 256,256)")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint BPE vocabulary size (default 8000)")
    p.add_argument("--systems", metavar="A,B,...",
                   help="only these systems (the baseline is always added; optional systems may be named); "
                        "default: the main table, or with --converge the spec's converged table")
    p.add_argument("--out", default="results", metavar="DIR", help="results root (default results)")
    p.add_argument("--dev-sentences", type=int, metavar="N",
                   help="dev sentences used for validation, 0 for all (default 200; with --converge all)")
    p.add_argument("--validate-every", type=int, default=500, metavar="STEPS", help="default 500")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="paired bootstrap resamples for the p-values (default 1000)")
    p.add_argument("--status", action="store_true",
                   help="print where each run of the table stands (finished, in progress: best dev BLEU, "
                        "validations since it, rate halvings, recent s/update; not started) and exit; trains nothing")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value of every system, e.g. --set data.batch_tokens=2000")


def _dims(text: str) -> tuple:
    try:
        emb, hidden = (int(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--dims expects two integers E,H, got '{text}'") from None
    if emb < 1 or hidden < 1:
        raise UserError(f"--dims must be positive, got '{text}'")
    return emb, hidden


def _seeds(text: str) -> list:
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--seeds expects integers separated by commas, got '{text}'") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds needs at least one seed and no repeats, got '{text}'")
    low, high = SEED.low, SEED.high
    outside = [s for s in seeds if not low <= s <= high]
    if outside:  # train.seed's own range, checked before any corpus is prepared or run started
        raise UserError(f"--seeds must be integers from {low} to {high}, got {outside[0]}")
    return seeds


def _print_status(papers, converge: bool, out_root: Path, systems, seeds, patience: int) -> int:
    import json

    from rnmt.reproduce.run import results_name
    from rnmt.reproduce.spec import load_paper
    from rnmt.reproduce.status import cost_line, reproduction_status, status_table, to_go_line

    for paper in papers:
        spec = load_paper(paper).for_protocol(converge)
        results_dir = out_root / results_name(spec.paper, converge)
        saved, settings = results_dir / "settings.json", {}
        if saved.is_file():  # the seeds and patience the table was started with
            try:
                settings = json.loads(saved.read_text(encoding="utf-8"))
                seeds, patience = settings.get("seeds") or seeds, settings.get("patience", patience)
            except ValueError:
                raise UserError(f"{saved}: not valid JSON") from None
        rows = reproduction_status(spec, results_dir, systems, seeds,
                                   patience if converge else None)  # an unknown system fails here
        print(f"{results_dir}:")
        print("\n".join(status_table(rows, patience if converge else None)))
        print(cost_line(rows))
        if converge and isinstance(settings.get("validate_every"), int) and any(r.state != "finished" for r in rows):
            print(to_go_line(rows, patience, settings["validate_every"], settings.get("updates")))
        print()
    return 0


def _converged_papers(papers, out_root: Path, seeds) -> tuple:
    """The papers with a converged table planned, a table with runs in progress first: a
    sitting continues what is started before it starts another table."""
    from rnmt.reproduce.run import results_name
    from rnmt.reproduce.spec import load_paper
    from rnmt.reproduce.status import reproduction_status

    planned = [p for p in papers if load_paper(p).converged]

    def started(paper: str) -> bool:
        spec = load_paper(paper).for_protocol(True)
        rows = reproduction_status(spec, out_root / results_name(spec.paper, True), None, seeds)
        return any(r.state.startswith("in progress") for r in rows)

    return tuple(sorted(planned, key=lambda p: not started(p)))  # stable: PAPERS order otherwise


def run(args: argparse.Namespace) -> int:
    from rnmt.reproduce import PAPERS, Settings, reproduce_papers

    emb, hidden = _dims(args.dims)
    if args.updates is None:
        args.updates = 30000 if args.converge else 2000
    if args.dev_sentences is None:
        args.dev_sentences = 0 if args.converge else 200
    if args.dev_sentences < 0:
        raise UserError(f"--dev-sentences must be 0 (all) or more, got {args.dev_sentences}")
    if not args.converge and (args.patience, args.plateau_patience) != (8, 2):
        raise UserError("--patience and --plateau-patience belong to --converge")
    checks.at_least(args, 1, "updates", "jobs", "vocab_size", "validate_every", "threads", "bootstrap", "patience",
                    "plateau_patience")
    check_threads(args.threads)
    if args.bootstrap > MAX_BOOTSTRAP:  # refused here, not after hours of training
        raise UserError(f"--bootstrap must be at most {MAX_BOOTSTRAP:,}, got {args.bootstrap}")
    seeds = _seeds(args.seeds)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    papers = PAPERS if args.paper == "all" else (args.paper,)
    if args.paper == "all" and args.converge:  # the papers with a converged table planned
        papers = _converged_papers(papers, Path(args.out), seeds)
    if systems and len(papers) > 1:
        raise UserError("--systems names systems of one paper; give a paper, not 'all'")
    if args.status:
        return _print_status(papers, args.converge, Path(args.out), systems, seeds, args.patience)
    settings = Settings(updates=args.updates, emb_size=emb, hidden_size=hidden, vocab_size=args.vocab_size,
                        dev_sentences=args.dev_sentences, validate_every=args.validate_every, seeds=seeds,
                        threads=args.threads, jobs=args.jobs, device=args.device, bootstrap=args.bootstrap,
                        overrides=list(args.overrides), converge=args.converge, patience=args.patience,
                        plateau_patience=args.plateau_patience)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    reproduce_papers(papers, settings, Path(args.out), args.data, args.src, args.tgt, systems, log)
    return 0
