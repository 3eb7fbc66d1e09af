"""Study. Question: How many CUDA graphs would `train.cuda_graphs` record in an epoch of bucketed batches?
Measured at: afcdfa7.
Answer: 75 bucket shapes per epoch for RNNSearch-GRU's batches on the Bible corpus, few enough to
record each once; a GPU run recorded the epoch's 72 (docs/gpu-performance.md, "On a GPU").

How many CUDA graphs `train.cuda_graphs` records: the distinct bucket shapes of a run's batches.

Every batch is padded to its bucket shape (rows, source and target lengths rounded up to a
multiple of the bucket; `rnmt/training/update_graphs.py`) and each new shape is recorded
once. This counts them epoch by epoch for a config's batches on benchmarks/prepare.py's
corpus, with no GPU and no training:

    python -m benchmarks.studies.graph_shapes --prepared PREPARED [--config benchmarks/configs/rnnsearch-gru.yaml]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from benchmarks.gpu import make_trainer
from rnmt.training.update_graphs import bucket_shape


def count(trainer, epochs: int, bucket: int) -> list:
    """(batches so far, distinct shapes so far) after each epoch."""
    lens_src, lens_tgt = trainer.corpus.src_lens, trainer.corpus.tgt_lens
    seen, batches, out = set(), 0, []
    for epoch in range(epochs):
        for idx in trainer.sampler.epoch_batches(epoch):
            # tgt_in holds BOS and the words: one position more than the target's length
            seen.add(bucket_shape(len(idx), int(max(lens_src[i] for i in idx)),
                                  int(max(lens_tgt[i] for i in idx)) + 1, bucket))
            batches += 1
        out.append((batches, len(seen)))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prepared", type=Path, required=True, help="benchmarks/prepare.py's output")
    p.add_argument("--config", default="benchmarks/configs/rnnsearch-gru.yaml")
    p.add_argument("--batch-tokens", type=int, default=4000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--buckets", default="8,16")
    args = p.parse_args(argv)
    prepared = args.prepared.resolve()
    with tempfile.TemporaryDirectory() as work:
        trainer = make_trainer(args.config, [
            f"data.batch_tokens={args.batch_tokens}", f"data.train={prepared / 'raw' / 'train'}", "data.dev=null",
            "data.test=null", "data.src=src", "data.tgt=tgt", f"data.vocab.model={prepared / 'spm.model'}",
            f"data.cache_dir={Path(work) / 'cache'}", "train.device=cpu", "train.progress=false"], Path(work) / "run")
        for bucket in (int(b) for b in args.buckets.split(",")):
            steps = count(trainer, args.epochs, bucket)
            print(f"bucket {bucket}: " + ", ".join(f"{s} shapes after {b} batches (epoch {e + 1})"
                                                   for e, (b, s) in enumerate(steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
