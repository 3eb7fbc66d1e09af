"""How long subword sampling takes: the set-up and one epoch's re-segmentation of a corpus.

Trains a sentencepiece vocabulary (joint, as rnmt's configs do) on a parallel corpus, then,
for each side, prepares a `rnmt.data.subword_sampling.SentenceSampler` (the words, their
characters or n-best lists) and samples ``--epochs`` epochs, printing wall-clock and CPU
seconds of each (the CPU time is what the process itself used, which matters on a busy
machine). The first BPE-dropout epoch also fills the cache of merges per symbol sequence.

    python -m benchmarks.subword_sampling --prefix ../shared/data/bible-es-en/train --src es --tgt en
    python -m benchmarks.subword_sampling --prefix data/sample/train --src es --tgt en --type unigram
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from rnmt.data import read_parallel, train_spm
from rnmt.data.subword_sampling import SentenceSampler


def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    return result, round(time.perf_counter() - wall, 2), round(time.process_time() - cpu, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--src", default="es")
    parser.add_argument("--tgt", default="en")
    parser.add_argument("--type", choices=["bpe", "unigram"], default="bpe")
    parser.add_argument("--size", type=int, default=8000)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--nbest", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    src, tgt, _ = read_parallel(f"{args.prefix}.{args.src}", f"{args.prefix}.{args.tgt}")
    vocab = train_spm(src + tgt, args.size, model_type=args.type)
    report = {"pairs": len(src), "type": args.type, "size": args.size, "sides": {}}
    for side, lines in ((args.src, src), (args.tgt, tgt)):
        sampler, wall, cpu = timed(SentenceSampler, vocab, lines, alpha=args.alpha, nbest=args.nbest,
                                   dropout=args.dropout)
        fixed = sum(len(ids) for ids in vocab.encode_batch(lines))
        epochs = []
        for epoch in range(args.epochs):
            (ids, _), e_wall, e_cpu = timed(sampler.sample, np.random.default_rng([1, epoch, 2]))
            epochs.append({"wall_s": e_wall, "cpu_s": e_cpu, "tokens": len(ids)})
        report["sides"][side] = {"words": len(sampler.words.words), "occurrences": len(sampler.words.occurrences),
                                 "deterministic_tokens": fixed, "setup_wall_s": wall, "setup_cpu_s": cpu,
                                 "epochs": epochs}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
