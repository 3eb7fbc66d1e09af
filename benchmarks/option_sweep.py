"""One search option swept over values on one model and test set (`benchmarks/no_repeat.py`,
`benchmarks/coverage.py`).

The model translates the same sentences with the same beam once per value, and each output
is scored: BLEU and chrF (sacrebleu) against the references, the length ratio, and the
degeneracy figures of the reproductions' sanity rule (`rnmt.evaluation.repetition`: looping
lines, repeated word 4-gram rate), beside the references' own. ``lines_changed`` counts the
outputs that differ from the first value's. Seconds per value are printed too (one pass
each, in the order given, so only indicative on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Callable, List


def parser(description: str, option: str, default: str, help_values: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", required=True, help="run directory or checkpoint")
    p.add_argument("--src", required=True, help="source sentences")
    p.add_argument("--ref", required=True, help="reference translations")
    p.add_argument(f"--{option}", default=default, help=help_values)
    p.add_argument("--beam", type=int, help="beam size (default: the model's config)")
    p.add_argument("--alpha", type=float, help="GNMT length penalty (default: the model's config)")
    p.add_argument("--normalize", choices=["gnmt", "length", "none"],
                   help="length normalisation of scores (default: the model's config)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="write the result here too")
    p.add_argument("--outputs", help="directory for each value's translations")
    return p


def sweep(args: argparse.Namespace, script: str, option: str, values: List, parse: Callable = float) -> dict:
    """Translate with ``option`` (a `rnmt.Model.translate` keyword) at each of ``values``;
    prints a JSON line per value and returns the whole result (commit, machine, command)."""
    import torch

    import rnmt
    from rnmt.evaluation.repetition import repetition
    from rnmt.reproduce.machine import describe_machine
    from rnmt.reproduce.run import code_commit

    torch.set_num_threads(args.threads)
    src = Path(args.src).read_text(encoding="utf-8").splitlines()
    ref = Path(args.ref).read_text(encoding="utf-8").splitlines()
    model = rnmt.load(args.model, device="cpu")
    search = model.config.search
    beam = args.beam or search.beam
    alpha = search.alpha if args.alpha is None else args.alpha
    normalize = args.normalize or search.normalize
    first = None
    rows = []
    for value in (parse(x) for x in values):
        t0 = time.perf_counter()
        hyps = model.translate(src, beam=beam, alpha=alpha, normalize=normalize, **{option: value})
        seconds = time.perf_counter() - t0
        scores = rnmt.evaluate(hyps, ref)
        hyp_words, ref_words = sum(len(h.split()) for h in hyps), sum(len(r.split()) for r in ref)
        row = {option: value, "bleu": round(scores["bleu"], 2), "chrf": round(scores["chrf"], 2),
               "length_ratio": round(hyp_words / max(ref_words, 1), 3), **repetition(hyps).to_dict(),
               "seconds": round(seconds, 1),
               "lines_changed": None if first is None else sum(a != b for a, b in zip(hyps, first))}
        first = hyps if first is None else first
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.outputs:
            Path(args.outputs).mkdir(parents=True, exist_ok=True)
            Path(args.outputs, f"hyp.{option}{value}.txt").write_text("".join(h + "\n" for h in hyps),
                                                                     encoding="utf-8")
    result = {"model": str(args.model), "step": model.loaded.meta.get("step"), "sentences": len(src),
              "beam": beam, "alpha": alpha, "normalize": normalize, "threads": args.threads,
              "reference": repetition(ref).to_dict(), "settings": rows, "commit": code_commit(),
              "machine": describe_machine(torch.device("cpu"), args.threads),
              "command": f"python -m benchmarks.{script} " + " ".join(
                  f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                  if v is not None and k not in ("json", "outputs"))}  # where files go changes no figure
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "settings"}))
    return result
