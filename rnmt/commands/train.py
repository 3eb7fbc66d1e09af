"""rnmt train CONFIG.yaml [--out DIR] [--set key.path=value ...] [--resume] [--accumulate K] [--init-from RUN]

Data-parallel training: ``torchrun --nproc-per-node N -m rnmt train CONFIG ...``
(docs/scaling.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from rnmt.commands import checks


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML config file or built-in config name (quickstart, atr/rnnsearch-atr)")
    p.add_argument("--out", help="output directory (default: runs/<config name>)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.max_steps=100 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    p.add_argument("--corpus-changed-ok", action="store_true",
                   help="with --resume: accept a training corpus whose content changed (continues "
                        "with the next epoch of the new corpus); without it a changed corpus is an error")
    p.add_argument("--init-from", metavar="RUN_OR_CHECKPOINT",
                   help="fine-tune: start from this model's weights and vocabulary with a fresh optimiser and "
                        "schedule (the config's model.* keys must match it)")
    p.add_argument("--accumulate", type=int, metavar="K",
                   help="accumulate the gradients of K batches per update and process "
                        "(sets train.accumulate; K = N on one process matches N processes)")


def run(args: argparse.Namespace) -> int:
    from rnmt.api import train
    from rnmt.data.vocab import training_abandoned
    from rnmt.training.signals import Interrupted

    checks.at_least(args, 1, "accumulate")
    overrides = list(args.overrides)
    if args.accumulate is not None:
        overrides.append(f"train.accumulate={args.accumulate}")

    try:
        summary = train(args.config, overrides, out=args.out, resume=args.resume,
                        corpus_changed_ok=args.corpus_changed_ok, init_from=args.init_from)
    except Interrupted as exc:
        # Before the first update nothing is saved: the preparation stopped at once
        # (rnmt.training.signals); exit as the signal would, as a stopped run does.
        print(f"error: stopped by {exc.name} while preparing the run (before its first update): nothing was "
              f"trained; run the same command again", file=sys.stderr, flush=True)
        return _leave(128 + exc.signum, at_once=training_abandoned())
    code = 0
    if summary["stop_signal"]:
        # Stopped by SIGTERM/SIGINT with everything saved: say so and exit as the signal would.
        print(f"stopped by {summary['stop_signal']} at step {summary['step']}; checkpoint saved in "
              f"{summary['out']}, continue with --resume", file=sys.stderr, flush=True)
        code = 128 + int(getattr(signal, summary["stop_signal"], signal.SIGTERM))
    return _leave(code)


def _leave(code: int, at_once: bool = False) -> int:
    """``code``, or the process's exit with it: as one of several processes, or ``at_once``
    (a vocabulary training still runs in a thread: `rnmt.data.vocab.training_abandoned`)."""
    if at_once or int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # One of several processes, its checkpoints and logs written and closed: leave without
        # running destructors. Freeing the DDP model drops the last reference to gloo's process
        # group, whose destructor joins a work thread that waits for the GIL this thread holds;
        # a rank was seen to hang there for good (torch 2.13, about one run in four).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
