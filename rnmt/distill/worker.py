"""Training runs of a distillation in their own process: ``rnmt distill --jobs N`` starts one
of these per student (with its fine-tuning) or baseline it trains side by side. Not a user
command."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from rnmt.errors import UserError


def main(argv: list) -> int:
    from rnmt.distill.students import TrainingStopped, train_run

    payload = json.loads(argv[0])
    out = Path(payload["out"])

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        for run in payload["runs"]:
            run = {**run, "dir": Path(run["dir"]),
                   "init_from": None if run["init_from"] is None else Path(run["init_from"])}
            train_run(run, out, log)
    except TrainingStopped as stopped:
        log(f"stopped: {stopped}")
        return 128 + int(getattr(signal, stopped.signal_name, signal.SIGTERM))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
