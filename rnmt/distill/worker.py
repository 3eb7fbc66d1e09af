"""Training runs of a distillation in their own process: ``rnmt distill --jobs N`` starts one
of these per student (with its fine-tuning) or baseline it trains side by side. Not a user
command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional


def main(argv: list) -> int:
    from rnmt.distill.students import TrainingStopped, train_run
    from rnmt.training.side_by_side import worker_exit

    payload = json.loads(argv[0])
    out = Path(payload["out"])

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def work() -> Optional[int]:
        try:
            for run in payload["runs"]:
                run = {**run, "dir": Path(run["dir"]),
                       "init_from": None if run["init_from"] is None else Path(run["init_from"])}
                train_run(run, out, log)
        except TrainingStopped as stopped:
            log(f"stopped: {stopped}")
            return stopped.exit_code
        return None

    return worker_exit(work)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
