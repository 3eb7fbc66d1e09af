"""One run of a reproduction in its own process: ``rnmt reproduce --jobs N`` starts one of
these per (system, seed) it trains side by side. Not a user command."""

from __future__ import annotations

import json
import sys


def main(argv: list) -> int:
    from rnmt.reproduce.run import run_one
    from rnmt.reproduce.system import Settings
    from rnmt.training.side_by_side import worker_exit

    job = json.loads(argv[0])

    def log(msg: str) -> None:
        print(f"[{job['paper']}/{job['run']}] {msg}", file=sys.stderr, flush=True)

    def work() -> None:  # the record goes to the results directory, not to the parent
        run_one(job["paper"], job["system"], int(job["seed"]), Settings(**job["settings"]), job["out_root"],
                job["data"], job["src"], job["tgt"], job["command"], log)

    return worker_exit(work)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
