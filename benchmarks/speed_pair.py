"""Time two systems' training side by side, as `rnmt reproduce` times a paper's speed claims.

    python -m benchmarks.speed_pair A/config.yaml B/config.yaml --out speed.json
    python -m benchmarks.speed_pair atr/config.yaml gru/config.yaml --b-set model.cell=lstm --name-b rnnsearch-lstm

Both configs' models (fresh weights) train the same batches in alternating rounds, A then
B, in one process on the same threads (`rnmt.reproduce.speed.measure_pair`); each round
gives one ratio of target tokens/s, and the median is the claim's figure. ``--a-set`` /
``--b-set`` override a config's keys (``KEY=VALUE``, as ``rnmt train --set``), e.g. to time
a unit that has no run of its own. The result names the commit and the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

from rnmt.config import apply_overrides, load_config, read_config_tree
from rnmt.device import pick_device
from rnmt.reproduce.machine import describe_machine
from rnmt.reproduce.run import code_commit
from rnmt.reproduce.speed import ROUNDS, STEPS, WARMUP, measure_pair


def resolved(path: Path, overrides: list, into: Path) -> Path:
    """``path`` with ``overrides`` applied (checked as `rnmt train --set` checks them)."""
    if not overrides:
        return path
    load_config(path, overrides)  # refuses unknown keys and bad values, as `rnmt train --set` does
    raw = apply_overrides(read_config_tree(path)[1], overrides)  # nested keys too (model.options.context=last)
    into.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config_a", type=Path)
    parser.add_argument("config_b", type=Path)
    parser.add_argument("--a-set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b-set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--name-a", help="the key's first name (default: the config's model.arch and cell)")
    parser.add_argument("--name-b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--out", type=Path, help="add the measurement to this JSON file (created if missing)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path_a = resolved(args.config_a, args.a_set, work / "a.yaml")
        path_b = resolved(args.config_b, args.b_set, work / "b.yaml")
        names = []
        for given, path in ((args.name_a, path_a), (args.name_b, path_b)):
            model = load_config(path).model
            names.append(given or f"{model.arch}-{model.cell}")
        result = measure_pair(path_a, path_b, work, args.threads, args.rounds, args.steps, args.warmup)
    result.update(commit=code_commit(), machine=describe_machine(pick_device("cpu"), args.threads, 1),
                  command=" ".join(["python", "-m", "benchmarks.speed_pair", *sys.argv[1:]]))
    key = "|".join(names)
    print(f"{key}: {', '.join(f'{r:.3f}' for r in result['ratios'])}, median {result['ratio']:.3f}")
    if args.out:
        known = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
        known[key] = result
        args.out.write_text(json.dumps(known, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
