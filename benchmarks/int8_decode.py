"""Decoding speed and BLEU of a trained model in fp32 and with int8 products (`--int8`).

    python benchmarks/int8_decode.py --model RUN [--src test.es --ref test.en] [--rounds 2] [--profile]

Loads the model twice per round (fp32, then int8, alternating), translates the whole source
file with the model's own search settings on one thread, and prints sentences/s (best round)
and BLEU of each, and the speed ratio. Defaults to the Bible test set next to the checkout.
``--profile`` then prints where one int8 pass over the first 100 sentences spends its time.
"""

from __future__ import annotations

import argparse
import time

import torch
from sacrebleu.metrics import BLEU

import rnmt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    parser.add_argument("--ref", default="../shared/data/bible-es-en/test.en")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    src = open(args.src, encoding="utf-8").read().splitlines()
    ref = open(args.ref, encoding="utf-8").read().splitlines()
    seconds = {False: [], True: []}
    hyps = {}
    for _ in range(args.rounds):
        for quantized in (False, True):
            model = rnmt.load(args.model, device="cpu", int8=quantized)
            model.translate(src[:8])  # warm-up
            start = time.perf_counter()
            hyps[quantized] = model.translate(src)
            seconds[quantized].append(time.perf_counter() - start)
    for quantized in (False, True):
        bleu = BLEU().corpus_score(hyps[quantized], [ref]).score
        print(f"{'int8' if quantized else 'fp32'}: {len(src) / min(seconds[quantized]):.2f} sentences/s "
              f"(best of {args.rounds}), BLEU {bleu:.2f}")
    print(f"int8 / fp32 speed: {min(seconds[False]) / min(seconds[True]):.2f}x")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        model = rnmt.load(args.model, device="cpu", int8=True)
        model.translate(src[:8])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model.translate(src[:100])
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
