"""rnmt lr-schedule CONFIG.yaml --steps N --out lr.png [--replicas N] [--steps-per-epoch K]

Plots the learning rate the trainer would use at every update of ``train.schedule``:
``rnmt_plus`` (DTMT eq. 17 with n = ``--replicas``, warm-up ``train.warmup_steps``, decay
from ``train.decay_start`` to ``train.decay_end``), ``epoch_halving`` (ATR / Cseq2seq,
with ``--steps-per-epoch`` updates per epoch), ``inverse_sqrt`` (Transformer),
``warmup_decay`` or ``constant``.
"""

from __future__ import annotations

import argparse
import sys

from rnmt.commands import checks

MAX_STEPS = 2_000_000  # every update's rate is computed and kept: 10**12 ran out of memory


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML config file")
    p.add_argument("--steps", type=int, required=True, help="number of updates to plot")
    p.add_argument("--out", help="image file to write (png, pdf, svg; default: only print values)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.schedule=inverse_sqrt (repeatable)")
    p.add_argument("--replicas", type=int,
                   help="n of DTMT eq. 17: the number of training processes (default: train.replicas, else 1)")
    p.add_argument("--steps-per-epoch", type=int, default=1000,
                   help="updates per epoch, for epoch_halving (default 1000)")
    p.add_argument("--csv", action="store_true", help="print 'step,epoch,lr' for every update")


def schedule_values(cfg, steps: int, steps_per_epoch: int):
    from rnmt.training.schedules import learning_rate

    return [(t, t // steps_per_epoch, learning_rate(cfg.train, t, t // steps_per_epoch)) for t in range(steps)]


def run(args: argparse.Namespace) -> int:
    from rnmt.config import load_config
    from rnmt.errors import UserError

    checks.at_least(args, 1, "steps", "steps_per_epoch", "replicas")
    if args.steps > MAX_STEPS:
        raise UserError(f"--steps must be at most {MAX_STEPS:,} (a rate is computed for every update), "
                        f"got {args.steps:,}")
    checks.output_apart("--out", args.out, [("the config", args.config)])
    if args.out is not None:  # before the schedule is computed and printed
        from rnmt.analysis.plots import image_path

        out, fmt = image_path(args.out)
    cfg = load_config(args.config, args.overrides)
    if args.replicas is not None:
        cfg.train.replicas = args.replicas
    elif cfg.train.replicas is None:
        cfg.train.replicas = 1
    values = schedule_values(cfg, args.steps, args.steps_per_epoch)
    if args.csv:
        print("step,epoch,lr")
        for t, epoch, lr in values:
            print(f"{t},{epoch},{lr:.8g}")
    peak = max(values, key=lambda v: v[2])
    print(f"{cfg.train.schedule}: lr(0) = {values[0][2]:.3g}, peak {peak[2]:.3g} at step {peak[0]}, "
          f"lr({args.steps - 1}) = {values[-1][2]:.3g}", file=sys.stderr)
    if args.out is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([v[0] for v in values], [v[2] for v in values])
        label = cfg.train.schedule
        if cfg.train.schedule == "rnmt_plus":
            label += (f" (n={cfg.train.replicas}, p={cfg.train.warmup_steps}, s={cfg.train.decay_start}, "
                      f"e={cfg.train.decay_end})")
        elif cfg.train.schedule == "epoch_halving":
            label += f" ({args.steps_per_epoch} steps per epoch)"
        ax.set_title(label)
        ax.set_xlabel("update step")
        ax.set_ylabel("learning rate")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        try:
            fig.savefig(out, format=fmt)
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot write {out}: {exc}") from None
        finally:
            plt.close(fig)
        print(f"wrote {out}", file=sys.stderr)
    return 0
