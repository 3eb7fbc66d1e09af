#!/usr/bin/env python3
"""What GNMT's coverage penalty does to a model's test output (docs/translation.md,
"Coverage penalty").

The same model translates the same sentences with the same beam once per beta
(`--coverage BETA`, 0 first: the plain search), each output scored as
`benchmarks/option_sweep.py` says:

    python -m benchmarks.coverage --model runs/bible --src test.es --ref test.en \\
        --betas 0,0.1,0.2,0.4 --json coverage.json

The penalty re-ranks beam search's finished hypotheses toward those whose attention has
covered every source word (`rnmt.search.coverage`); the figures to read are BLEU and chrF,
the length ratio (dropped source words shorten an output) and how many outputs it changed.
"""

from __future__ import annotations

from benchmarks.option_sweep import parser, sweep


def main() -> None:
    p = parser(__doc__.split("\n\n")[0], "betas", "0,0.1,0.2,0.4", "comma-separated betas; 0 is no penalty")
    args = p.parse_args()
    sweep(args, "coverage", "coverage", args.betas.split(","), float)


if __name__ == "__main__":
    main()
