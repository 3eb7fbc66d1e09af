"""Peak memory of translating a file in chunks (`rnmt translate`) against all at once.

For each size, an input of that many lines is written by repeating the bundled sample's
source side, and two fresh processes translate it with the same model, greedy search, one
thread:

* ``chunked``: ``rnmt translate --input F --output O`` (chunks of ``--chunk-lines``);
* ``whole``: what ``rnmt translate`` did before it read in chunks: every line read, then
  one ``Model.translate`` call over all of them, then written.

Each process's peak resident set size comes from ``os.wait4``. Without ``--model`` a tiny
model (the tests' size: 16-dim embeddings, 24 hidden units, a 300-piece vocabulary) is
trained for 30 updates first, so the figures show what the input costs beyond the fixed
runtime rather than the model.

    python -m benchmarks.translate_rss --sizes 10000 100000 --work work/translate-rss
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SAMPLE = REPO / "data" / "sample"
WHOLE = """
import sys, torch, rnmt
from rnmt.data import read_lines
torch.set_num_threads(1)
model = rnmt.load(sys.argv[1], device="cpu")
out = model.translate(read_lines(sys.argv[2]), greedy=True)
with open(sys.argv[3], "w", encoding="utf-8") as fh:
    fh.write("".join(t + "\\n" for t in out))
"""


def tiny_model(work: Path) -> Path:
    import rnmt

    out = work / "tiny"
    if (out / "best.safetensors").is_file():
        return out
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for lang in ("es", "en"):
        lines = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        (corpus / f"train.{lang}").write_text("\n".join(lines[:240]) + "\n", encoding="utf-8")
    tree = {"data": {"train": str(corpus / "train"), "src": "es", "tgt": "en", "batch_tokens": 600, "max_len": 60,
                     "vocab": {"size": 300}},
            "model": {"emb_size": 16, "hidden_size": 24},
            "train": {"max_steps": 30, "lr": 0.003, "warmup_steps": 2, "threads": 1, "progress": False,
                      "validate_every": 1000},
            "search": {"max_len_ratio": 1.0, "max_len_offset": 2}}
    rnmt.train(tree, out=out, log=lambda *_: None)
    return out


def make_input(work: Path, lines: int) -> Path:
    path = work / f"input-{lines}.es"
    if not path.is_file():
        sample = (SAMPLE / "train.es").read_text(encoding="utf-8").splitlines()
        with open(path, "w", encoding="utf-8") as fh:
            for k in range(lines):
                fh.write(sample[k % len(sample)] + "\n")
    return path


def measure(cmd: list) -> dict:
    """Run ``cmd``; its wall time and peak RSS (MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{err}")
    return {"seconds": round(time.perf_counter() - start, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--work", default="work/translate-rss", help="inputs, outputs and the tiny model")
    ap.add_argument("--model", help="a run directory or checkpoint (default: train the tiny model)")
    ap.add_argument("--chunk-lines", type=int, default=5000)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model = Path(args.model) if args.model else tiny_model(work)
    rnmt_cmd = [sys.executable, "-m", "rnmt"]
    rows = []
    for n in args.sizes:
        src = make_input(work, n)
        chunked = measure([*rnmt_cmd, "translate", "--model", str(model), "--input", str(src), "--output",
                           str(work / f"chunked-{n}.en"), "--greedy", "--threads", "1", "--device", "cpu",
                           "--chunk-lines", str(args.chunk_lines)])
        whole = measure([sys.executable, "-c", WHOLE, str(model), str(src), str(work / f"whole-{n}.en")])
        same = (work / f"chunked-{n}.en").read_bytes() == (work / f"whole-{n}.en").read_bytes()
        row = {"lines": n, "chunked": chunked, "whole": whole, "same_output": same}
        rows.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
