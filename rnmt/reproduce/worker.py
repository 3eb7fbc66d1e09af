"""One run of a reproduction in its own process: ``rnmt reproduce --jobs N`` starts one of
these per (system, seed) it trains side by side. Not a user command."""

from __future__ import annotations

import json
import sys

from rnmt.errors import UserError


def main(argv: list) -> int:
    from rnmt.reproduce.run import run_one
    from rnmt.reproduce.system import Settings

    job = json.loads(argv[0])

    def log(msg: str) -> None:
        print(f"[{job['paper']}/{job['run']}] {msg}", file=sys.stderr, flush=True)

    try:
        run_one(job["paper"], job["system"], int(job["seed"]), Settings(**job["settings"]), job["out_root"],
                job["data"], job["src"], job["tgt"], job["command"], log)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
