#!/usr/bin/env python3
"""What blocking repeated n-grams does to a model's test output (docs/translation.md,
"Blocking repeats").

The same model translates the same sentences with the same beam once without blocking and
once per n-gram size N (`--no-repeat-ngram N`, subword n-grams), and each output is scored:
BLEU and chrF (sacrebleu) against the references, and the degeneracy figures of the
reproductions' sanity rule (`rnmt.evaluation.repetition`: looping lines, repeated word
4-gram rate), beside the references' own:

    python benchmarks/no_repeat.py --model runs/bible --src test.es --ref test.en \\
        --ngrams 0,3,4,6 --json no_repeat.json

Blocking subword n-grams of size N <= 4 rules out repeated word 4-grams (a repeated word
4-gram is a repeated run of at least four subwords), so its rate falls to zero by
construction; the figures to read are what it costs or gives in BLEU and chrF, and how often
it changed an output. Seconds per setting are printed too (one pass each, in the order
given, so only indicative on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="run directory or checkpoint")
    p.add_argument("--src", required=True, help="source sentences")
    p.add_argument("--ref", required=True, help="reference translations")
    p.add_argument("--ngrams", default="0,3,4", help="comma-separated n-gram sizes; 0 is no blocking")
    p.add_argument("--beam", type=int, help="beam size (default: the model's config)")
    p.add_argument("--alpha", type=float, help="GNMT length penalty (default: the model's config)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="write the result here too")
    p.add_argument("--outputs", help="directory for each setting's translations")
    args = p.parse_args()

    import torch

    import rnmt
    from rnmt.evaluation.repetition import repetition

    torch.set_num_threads(args.threads)
    src = Path(args.src).read_text(encoding="utf-8").splitlines()
    ref = Path(args.ref).read_text(encoding="utf-8").splitlines()
    model = rnmt.load(args.model, device="cpu")
    search = model.config.search
    beam = args.beam or search.beam
    alpha = search.alpha if args.alpha is None else args.alpha
    plain = None
    rows = []
    for n in (int(x) for x in args.ngrams.split(",")):
        t0 = time.perf_counter()
        hyps = model.translate(src, beam=beam, alpha=alpha, no_repeat_ngram=n)
        seconds = time.perf_counter() - t0
        plain = hyps if n == 0 else plain
        scores = rnmt.evaluate(hyps, ref)
        row = {"no_repeat_ngram": n, "bleu": round(scores["bleu"], 2), "chrf": round(scores["chrf"], 2),
               **repetition(hyps).to_dict(), "seconds": round(seconds, 1),
               "lines_changed": None if plain is None or n == 0 else sum(a != b for a, b in zip(hyps, plain))}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.outputs:
            Path(args.outputs).mkdir(parents=True, exist_ok=True)
            Path(args.outputs, f"hyp.no_repeat{n}.txt").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    from rnmt.reproduce.machine import describe_machine
    from rnmt.reproduce.run import code_commit

    commit = code_commit()
    result = {"model": str(args.model), "step": model.loaded.meta.get("step"), "sentences": len(src),
              "beam": beam, "alpha": alpha, "normalize": search.normalize, "threads": args.threads,
              "reference": repetition(ref).to_dict(), "settings": rows, "commit": commit,
              "machine": describe_machine(torch.device("cpu"), args.threads),
              "command": "python benchmarks/no_repeat.py " + " ".join(
                  f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None and k != "json")}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "settings"}))


if __name__ == "__main__":
    main()
