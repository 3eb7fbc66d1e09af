"""Decoding speed and BLEU of a trained model in fp32 and with int8 products (`--int8`).

    python -m benchmarks.int8_decode --model RUN [--src test.es --ref test.en] [--rounds 2] [--profile]
    python -m benchmarks.int8_decode --model RUN --layers [--limit 200]
    python -m benchmarks.int8_decode --model RUN --kernels fbgemm,onednn [--rounds 5]

Loads the model twice per round (fp32, then int8, alternating), translates the whole source
file with the model's own search settings on one thread, and prints sentences/s (best round)
and BLEU of each, the speed ratio and the int8 output's BLEU against the fp32 output
(self-BLEU: 100 = the same translations). Defaults to the Bible test set next to the checkout.
``--kernels`` times the int8 model once per library of int8 kernels named (fbgemm's,
oneDNN's; default: the one `rnmt.int8.engine` picks on this CPU), each in every round.
``--profile`` then prints where one int8 pass over the first 100 sentences spends its time.
``--layers`` instead measures where the int8 loss arises: each group of products (by module:
encoder, attention, readouts, output layer, ...; the units' recurrent and input matrices
apart) quantised alone and all but that group, each as self-BLEU against fp32.
"""

from __future__ import annotations

import argparse
import re
import time

import torch
from sacrebleu.metrics import BLEU

import rnmt
from rnmt import int8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    parser.add_argument("--ref", default="../shared/data/bible-es-en/test.en")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--layers", action="store_true", help="self-BLEU with each group of products in int8")
    parser.add_argument("--limit", type=int, default=0, help="only the first N sentences (0: all)")
    parser.add_argument("--kernels", default="", help="int8 kernels to time, comma-separated: fbgemm, onednn "
                                                      "(default: rnmt's choice on this CPU)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    src = open(args.src, encoding="utf-8").read().splitlines()
    ref = open(args.ref, encoding="utf-8").read().splitlines()
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    if args.layers:
        return layers(args.model, src)
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] or [int8.engine()]
    variants = ["fp32", *(f"int8 {k}" for k in kernels)]
    seconds = {v: [] for v in variants}
    hyps = {}
    for _ in range(args.rounds):
        for variant in variants:
            model = rnmt.load(args.model, device="cpu")
            if variant != "fp32":
                int8.quantize_for_decoding(model.loaded.model, kernels=variant.split()[1])
            model.translate(src[:8])  # warm-up
            start = time.perf_counter()
            hyps[variant] = model.translate(src)
            seconds[variant].append(time.perf_counter() - start)
    for variant in variants:
        bleu = BLEU().corpus_score(hyps[variant], [ref]).score
        per_round = " ".join(f"{len(src) / t:.1f}" for t in seconds[variant])
        print(f"{variant}: {len(src) / min(seconds[variant]):.2f} sentences/s (best of {args.rounds}; rounds: "
              f"{per_round}), BLEU {bleu:.2f}")
    for variant in variants[1:]:
        ratios = sorted(f / q for f, q in zip(seconds["fp32"], seconds[variant]))
        print(f"{variant} / fp32 speed: {min(seconds['fp32']) / min(seconds[variant]):.2f}x (best against best; "
              f"per round, median {ratios[len(ratios) // 2]:.2f}x, {ratios[0]:.2f}-{ratios[-1]:.2f}x)")
        print(f"self-BLEU ({variant} against fp32): {BLEU().corpus_score(hyps[variant], [hyps['fp32']]).score:.2f}")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        model = rnmt.load(args.model, device="cpu", int8=True)
        model.translate(src[:8])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model.translate(src[:100])
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def group_of(name: str) -> str:
    """A product's group: its top-level module, units split into recurrent (weight_h) and
    input (weight_x) matrices, numbered decoder units (unit1, unit2) taken together."""
    top = re.sub(r"\d+$", "", name.split(".")[0])
    if name.endswith((".weight_h", ".weight_x")):
        return f"{top} {'recurrent' if name.endswith('_h') else 'input'}"
    return top


def layers(path: str, src: list) -> None:
    from torch import nn

    from rnmt.int8 import quantize_for_decoding

    reference = rnmt.load(path, device="cpu").translate(src)
    names = []
    for name, module in rnmt.load(path, device="cpu").loaded.model.named_modules():
        if isinstance(module, nn.Linear) and module.out_features > 1:
            names.append(name)
        names += [f"{name}.weight_{k}" for k in "hx" if isinstance(getattr(module, f"weight_{k}", None), nn.Parameter)
                  and hasattr(module, f"int8_{k}")]
    groups = sorted({group_of(n) for n in names})
    print(f"{len(src)} sentences; self-BLEU against fp32 (100 = identical output)")
    print(f"{'group':<22} {'products':>8} {'only it int8':>13} {'all but it int8':>16}")
    for group in [*groups, "(all)"]:
        row = []
        for only in (True, False):
            if group == "(all)" and not only:
                row.append(float("nan"))
                continue
            model = rnmt.load(path, device="cpu")
            in_group = (lambda n: True) if group == "(all)" else (lambda n, g=group: group_of(n) == g)
            keep = (lambda n, f=in_group: not f(n)) if only else in_group
            quantize_for_decoding(model.loaded.model, keep_fp32=keep)
            row.append(BLEU().corpus_score(model.translate(src), [reference]).score)
        count = len(names) if group == "(all)" else sum(group_of(n) == group for n in names)
        print(f"{group:<22} {count:>8} {row[0]:>13.2f} {row[1]:>16.2f}")


if __name__ == "__main__":
    main()
