#!/usr/bin/env python3
"""What blocking repeated n-grams does to a model's test output (docs/translation.md,
"Blocking repeats").

The same model translates the same sentences with the same beam once without blocking and
once per n-gram size N (`--no-repeat-ngram N`, subword n-grams), each output scored as
`benchmarks/option_sweep.py` says:

    python -m benchmarks.no_repeat --model runs/bible --src test.es --ref test.en \\
        --ngrams 0,3,4,6 --json no_repeat.json

Blocking subword n-grams of size N <= 4 rules out repeated word 4-grams (a repeated word
4-gram is a repeated run of at least four subwords), so its rate falls to zero by
construction; the figures to read are what it costs or gives in BLEU and chrF, and how often
it changed an output.
"""

from __future__ import annotations

from benchmarks.option_sweep import parser, sweep


def main() -> None:
    p = parser(__doc__.split("\n\n")[0], "ngrams", "0,3,4", "comma-separated n-gram sizes; 0 is no blocking")
    args = p.parse_args()
    sweep(args, "no_repeat", "no_repeat_ngram", args.ngrams.split(","), int)


if __name__ == "__main__":
    main()
