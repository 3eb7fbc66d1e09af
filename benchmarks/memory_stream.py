"""Peak memory of encoding and iterating corpora of different sizes.

For each size, a synthetic parallel corpus is written (streamed to disk), then two fresh
processes each measure their own peak resident set size (``resource.getrusage``):

* ``encode``: `encode_corpus` into the memory-mappable cache;
* ``iterate``: load the cache and go through one whole shuffled epoch the way the trainer
  does (`TokenBatchSampler` -> `collate` -> tensors), touching every pair once.

Both processes import torch first, like a training process, so the figures compare the
extra memory a large corpus costs against the fixed cost of the runtime.

    python -m benchmarks.memory_stream --sizes 100000 5000000 --work rnmt-memory-bench

The corpora and caches are kept under ``--work`` between runs (delete it afterwards).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import module_command, module_env

WORDS = 2000  # synthetic word types per language


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def synth_corpus(prefix: Path, pairs: int, seed: int = 7) -> None:
    """``pairs`` lines per side of 3-20 words, streamed out in blocks."""
    import numpy as np

    src_file, tgt_file = Path(f"{prefix}.src"), Path(f"{prefix}.tgt")
    if src_file.is_file() and tgt_file.is_file():
        return
    rng = np.random.default_rng(seed)
    src_words = [f"s{i}x" for i in range(WORDS)]
    tgt_words = [f"t{i}y" for i in range(WORDS)]
    tmp_s, tmp_t = src_file.with_suffix(".src.part"), tgt_file.with_suffix(".tgt.part")
    with open(tmp_s, "w") as fs, open(tmp_t, "w") as ft:
        block = 50_000
        for lo in range(0, pairs, block):
            n = min(block, pairs - lo)
            lens = rng.integers(3, 21, n)
            ids = rng.zipf(1.3, int(lens.sum())) % WORDS
            pos = 0
            out_s, out_t = [], []
            for length in lens.tolist():
                sent = ids[pos:pos + length].tolist()
                pos += length
                out_s.append(" ".join(src_words[i] for i in sent))
                out_t.append(" ".join(tgt_words[(i * 7 + 3) % WORDS] for i in sent[::-1]))
            fs.write("\n".join(out_s) + "\n")
            ft.write("\n".join(out_t) + "\n")
    tmp_s.rename(src_file)
    tmp_t.rename(tgt_file)


def child(args: argparse.Namespace) -> None:
    import torch  # noqa: F401  (the training process's fixed cost)

    from rnmt.data import TokenBatchSampler, collate, encode_corpus, load_vocab

    work = Path(args.work)
    vocab = load_vocab(work / "spm.model")
    prefix = work / f"corpus{args.pairs}"
    cache = work / f"cache{args.pairs}"
    if args.phase == "encode":
        shutil.rmtree(cache, ignore_errors=True)  # measure encoding from scratch
    start = time.perf_counter()
    corpus = encode_corpus(f"{prefix}.src", f"{prefix}.tgt", vocab, vocab, cache, max_len=100)
    out = {"pairs": len(corpus), "phase": args.phase}
    if args.phase == "iterate":
        sampler = TokenBatchSampler(corpus.src_lens, corpus.tgt_lens, max_tokens=args.batch_tokens, seed=1)
        batches = tokens = 0
        for indices in sampler:
            batch = collate(corpus, indices)
            batches += 1
            tokens += batch.ntokens
        out.update(batches=batches, target_tokens=tokens)
    out.update(seconds=round(time.perf_counter() - start, 1), peak_rss_mb=round(peak_rss_mb(), 1))
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 5_000_000])
    p.add_argument("--work", default="rnmt-memory-bench")
    p.add_argument("--batch-tokens", type=int, default=4096)
    p.add_argument("--vocab-size", type=int, default=1000)
    p.add_argument("--phase", choices=["encode", "iterate"], help=argparse.SUPPRESS)
    p.add_argument("--pairs", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        child(args)
        return

    from rnmt.data import train_vocabs

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for n in args.sizes:
        t0 = time.perf_counter()
        synth_corpus(work / f"corpus{n}", n)
        print(f"corpus of {n} pairs ready ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if not (work / "spm.model").is_file():
        smallest = work / f"corpus{min(args.sizes)}"
        train_vocabs(f"{smallest}.src", f"{smallest}.tgt", work, joint=True, src_size=args.vocab_size,
                     tgt_size=args.vocab_size)
    results = []
    for n in args.sizes:
        for phase in ("encode", "iterate"):
            cmd = module_command("benchmarks.memory_stream", "--phase", phase, "--pairs", str(n), "--work", str(work),
                                 "--batch-tokens", str(args.batch_tokens))
            res = subprocess.run(cmd, capture_output=True, text=True, env=module_env())
            if res.returncode != 0:
                sys.exit(res.stderr)
            record = json.loads(res.stdout.strip().splitlines()[-1])
            record["size"] = n
            results.append(record)
            print(json.dumps(record), flush=True)
    base = {r["phase"]: r["peak_rss_mb"] for r in results if r["size"] == min(args.sizes)}
    for r in results:
        r["vs_smallest"] = round(r["peak_rss_mb"] / base[r["phase"]], 2)
    print("\n| pairs | phase | seconds | peak RSS (MB) | vs smallest |\n|---:|---|---:|---:|---:|")
    for r in results:
        print(f"| {r['size']:,} | {r['phase']} | {r['seconds']} | {r['peak_rss_mb']} | {r['vs_smallest']}x |")


if __name__ == "__main__":
    main()
