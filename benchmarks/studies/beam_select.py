"""Study. Question: Does choosing beam extensions in blocks of 64 words beat one topk over beam x vocabulary?
Measured at: 65e63e1.
Answer: yes on the CPU: 1.11-1.15x fp32 and 1.15-1.23x int8 decoding on the DTMT table's models, the
same translations in fp32; a GPU keeps the single topk, where kernel launches dominate
(docs/cpu-speed.md, "Decoding").

Beam search's candidate selection: block pre-selection (`best_extensions`) against one
`topk` over each sentence's beam x vocabulary candidates, on a trained model.

    python -m benchmarks.studies.beam_select --model RUN [--int8] [--rounds 3] [--sentences 517]

Translates the first ``--sentences`` verses of the Bible test set with the model's own beam
on one thread, alternating the two selections each round, and prints sentences/s (best
round) and BLEU for each, their speed ratio, and how many translations are identical. In
fp32 all are; with int8 products a few may differ, because a product's activations are
quantised with one range for the whole batch, dead hypotheses' rows included, and the two
selections give those rows different (irrelevant) tokens.
"""

from __future__ import annotations

import argparse
import time

import torch
from sacrebleu.metrics import BLEU

import rnmt
from rnmt.search import beam as beam_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    parser.add_argument("--ref", default="../shared/data/bible-es-en/test.en")
    parser.add_argument("--sentences", type=int, default=517)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--int8", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    src = open(args.src, encoding="utf-8").read().splitlines()[: args.sentences]
    ref = open(args.ref, encoding="utf-8").read().splitlines()[: args.sentences]
    model = rnmt.load(args.model, device="cpu", int8=args.int8)
    model.translate(src[:8])  # warm-up
    blocks = beam_module.best_extensions
    seconds: dict[str, list[float]] = {"one topk": [], "blocks": []}
    outputs = {}
    for _ in range(args.rounds):
        for name, select in (("one topk", beam_module.one_topk_extensions), ("blocks", blocks)):
            beam_module.best_extensions = select
            start = time.perf_counter()
            outputs[name] = model.translate(src)
            seconds[name].append(time.perf_counter() - start)
    beam_module.best_extensions = blocks
    same = sum(a == b for a, b in zip(outputs["one topk"], outputs["blocks"]))
    for name, times in seconds.items():
        bleu = BLEU().corpus_score(outputs[name], [ref]).score
        print(f"{name}: {len(src) / min(times):.2f} sentences/s (best of {args.rounds}), BLEU {bleu:.2f}")
    print(f"blocks / one topk: {min(seconds['one topk']) / min(seconds['blocks']):.2f}x; "
          f"identical translations {same}/{len(src)}")


if __name__ == "__main__":
    main()
