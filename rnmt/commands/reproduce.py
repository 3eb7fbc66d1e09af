"""rnmt reproduce PAPER [--updates N] [--seeds 1,2] [--jobs N] [--data DIR] [--dims E,H] [--systems a,b] [--set ...]

Trains every system of a paper's main tables at a reduced size for the same number of
updates, under the paper's family recipe, decodes the test set with the paper's beam settings and writes
``results/<paper>/README.md``. Finished systems are skipped and stopped ones resumed, so
the command can be run again until everything is done. See docs/reproduce.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rnmt.errors import UserError

# The papers, 'all' of them, and rnmt's own protocols run the same way (bf16: precision parity).
PAPER_CHOICES = ("atr", "cseq2seq", "dtmt", "survey", "all", "bf16")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paper", choices=PAPER_CHOICES,
                   help="whose tables to reproduce; 'all' runs atr, cseq2seq, dtmt, survey in that order; 'bf16' "
                        "trains RNNSearch-GRU and DTMT#4 in fp32 and bf16 (docs/performance.md)")
    p.add_argument("--updates", type=int, default=2000, metavar="N",
                   help="training updates of every system (default 2000): the papers compare at equal updates")
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
                   help="only these systems (the baseline is always added; optional systems may be named)")
    p.add_argument("--out", default="results", metavar="DIR", help="results root (default results)")
    p.add_argument("--dev-sentences", type=int, default=200, help="dev sentences used for validation (default 200)")
    p.add_argument("--validate-every", type=int, default=500, metavar="STEPS", help="default 500")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="paired bootstrap resamples for the p-values (default 1000)")
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
    return seeds


def run(args: argparse.Namespace) -> int:
    from rnmt.reproduce import PAPERS, Settings, reproduce_paper

    emb, hidden = _dims(args.dims)
    for name in ("updates", "jobs", "vocab_size", "dev_sentences", "validate_every", "threads", "bootstrap"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    seeds = _seeds(args.seeds)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    papers = PAPERS if args.paper == "all" else (args.paper,)
    if systems and len(papers) > 1:
        raise UserError("--systems names systems of one paper; give a paper, not 'all'")
    settings = Settings(updates=args.updates, emb_size=emb, hidden_size=hidden, vocab_size=args.vocab_size,
                        dev_sentences=args.dev_sentences, validate_every=args.validate_every, seeds=seeds,
                        threads=args.threads, jobs=args.jobs, device=args.device, bootstrap=args.bootstrap,
                        overrides=list(args.overrides))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    for paper in papers:
        reproduce_paper(paper, settings, Path(args.out), args.data, args.src, args.tgt, systems, log)
    return 0
