#!/usr/bin/env python3
"""Time ``rnmt translate`` on one very long input line (docs/reliability.md, "Bad input").

The script trains the tiny RNNSearch of the tests on the bundled sample (emb 16, hidden
24, 300 subwords, 6 updates: it never emits an end mark, so every output runs to its
length limit, the worst case), writes an input of three lines whose middle one has
``--words`` words drawn at random (seeded) from the training text, and runs
``rnmt translate`` on it as a user would, in a separate process:

    python -m benchmarks.long_line --words 50000 --json long_line.json

It prints one JSON object: the words and subwords of the long line, the pieces it was
translated in (from the command's warning), the wall time, CPU time and peak RSS of the
command (start-up and model loading included) and whether it wrote one output line per
input line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


def tiny_run(directory: Path) -> Path:
    """The tests' tiny model (tests/support.py, tiny_config_tree), trained for 6 updates."""
    for lang in ("es", "en"):
        lines = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        (directory / f"train.{lang}").write_text("\n".join(lines[:240]) + "\n", encoding="utf-8")
        (directory / f"dev.{lang}").write_text("\n".join(lines[5000:5012]) + "\n", encoding="utf-8")
    tree = {
        "data": {"train": str(directory / "train"), "dev": str(directory / "dev"), "src": "es", "tgt": "en",
                 "batch_tokens": 600, "max_len": 60, "vocab": {"size": 300}},
        "model": {"emb_size": 16, "hidden_size": 24, "dropout": 0.1},
        "train": {"max_steps": 6, "log_every": 1, "validate_every": 3, "lr": 0.003, "warmup_steps": 2,
                  "threads": 1, "progress": False, "patience": None, "device": "cpu"},
        "search": {"beam": 2, "max_len_ratio": 1.0, "max_len_offset": 2},
    }
    config = directory / "config.yaml"
    config.write_text(yaml.safe_dump(tree), encoding="utf-8")
    out = directory / "run"
    subprocess.run([sys.executable, "-m", "rnmt", "train", str(config), "--out", str(out)], check=True,
                   capture_output=True, text=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=50000, help="words of the long line (default 50000)")
    parser.add_argument("--threads", type=int, default=1, help="--threads of rnmt translate (default 1)")
    parser.add_argument("--max-input-tokens", type=int, help="passed to rnmt translate (default: its own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the result to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run = tiny_run(work)
        words = (work / "train.es").read_text(encoding="utf-8").split()
        rng = random.Random(args.seed)
        line = " ".join(rng.choice(words) for _ in range(args.words))
        source = work / "input.es"
        source.write_text(f"Y dijo Dios.\n{line}\nY vio Dios que la luz era buena.\n", encoding="utf-8")
        output = work / "output.en"
        errors = work / "stderr.txt"
        start = time.perf_counter()
        with open(errors, "w") as err:
            extra = ["--max-input-tokens", str(args.max_input_tokens)] if args.max_input_tokens else []
            command = subprocess.Popen([sys.executable, "-m", "rnmt", "translate", "--model", str(run), "--input",
                                        str(source), "--output", str(output), "--threads", str(args.threads),
                                        *extra], stderr=err)
            _, status, usage = os.wait4(command.pid, 0)  # this child's own peak RSS
        seconds = time.perf_counter() - start
        stderr = errors.read_text(encoding="utf-8")
        if os.waitstatus_to_exitcode(status) != 0:
            print(stderr, file=sys.stderr)
            return 1
        warning = re.search(r"line 2: (\d+) subwords, more than --max-input-tokens (\d+): translated in (\d+) pieces",
                            stderr)
        result = {
            "words": args.words,
            "subwords": int(warning.group(1)) if warning else None,
            "max_input_tokens": int(warning.group(2)) if warning else None,
            "pieces": int(warning.group(3)) if warning else 1,
            "wall_s": round(seconds, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),  # steadier than wall time on a shared machine
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "output_lines": len(output.read_text(encoding="utf-8").splitlines()),
            "input_lines": 3,
        }
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
