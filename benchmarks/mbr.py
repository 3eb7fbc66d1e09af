"""Minimum Bayes risk decoding against beam search: BLEU, chrF and time on one test set.

    python -m benchmarks.mbr --model RUN [--src test.es --ref test.en] [--beam 5]
        [--candidates 16] [--epsilon 0.02] [--lines N] [--json OUT] [--hyp-dir DIR]

Decodes the source file, one thread, in these ways:

* ``beam``: beam search (``--beam``), the baseline every other way is compared with;
* ``beam nbest, mbr chrf`` and ``beam nbest, mbr bleu``: the ``--candidates`` best of a beam
  of that width, chosen among by expected chrF or BLEU, each weighed by its model
  probability;
* ``samples, best score``: ``--candidates`` epsilon samples, the one of best model score
  (the same candidates as the next two ways, without MBR: what sampling alone gives);
* ``samples, mbr chrf`` and ``samples, mbr bleu``: the same samples chosen among by
  expected chrF or BLEU, each sample one draw of the model's distribution.

Prints and (``--json``) records each way's BLEU and chrF, their differences from beam
search with paired bootstrap 95% intervals and p (1,000 resamples), the seconds it took and
its ratio to beam search's, and the lines whose output equals beam search's. The time of the
MBR choice itself is the difference between the ``samples, mbr`` ways and ``samples, best
score``. Stop every other job on the machine while it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.constraints import commit  # the checkout's short commit

WAYS: List[Dict[str, Any]] = [
    {"name": "beam"},
    {"name": "beam nbest, mbr chrf", "nbest": True, "mbr": "chrf"},
    {"name": "beam nbest, mbr bleu", "nbest": True, "mbr": "bleu"},
    {"name": "samples, best score", "sample": True},
    {"name": "samples, mbr chrf", "sample": True, "mbr": "chrf"},
    {"name": "samples, mbr bleu", "sample": True, "mbr": "bleu"},
]


def options(way: Dict[str, Any], beam: int, candidates: int, epsilon: float, seed: int) -> Dict[str, Any]:
    """The keywords of `rnmt.api.Model.translate` for one way."""
    if way.get("sample"):
        return {"sample": True, "nbest": candidates, "epsilon": epsilon, "seed": seed, "mbr": way.get("mbr")}
    if way.get("nbest"):
        return {"beam": max(beam, candidates), "nbest": candidates, "mbr": way["mbr"]}
    return {"beam": beam}


def best_text(result: Any) -> str:
    return result if isinstance(result, str) else result[0].text


def measure(path: str, src: List[str], ref: List[str], beam: int, candidates: int, epsilon: float,
            seed: int, hyp_dir: Optional[Path] = None) -> List[Dict[str, Any]]:
    from sacrebleu.metrics import BLEU, CHRF

    import rnmt
    from rnmt.evaluation.significance import difference_interval

    model = rnmt.load(path, device="cpu")
    model.translate(src[:8], beam=beam)  # first-call costs outside the timing
    outputs, seconds = [], []
    for way in WAYS:
        start = time.perf_counter()
        outputs.append([best_text(r) for r in model.translate(src, **options(way, beam, candidates, epsilon, seed))])
        seconds.append(time.perf_counter() - start)
    if hyp_dir is not None:  # every figure recomputes from these
        hyp_dir.mkdir(parents=True, exist_ok=True)
        for way, out in zip(WAYS, outputs):
            name = way["name"].replace(", ", "-").replace(" ", "-")
            (hyp_dir / f"{name}.txt").write_text("".join(line + "\n" for line in out), encoding="utf-8")
    rows = []
    for way, out, took in zip(WAYS, outputs, seconds):
        bleu = difference_interval(out, outputs[0], ref)
        chrf = difference_interval(out, outputs[0], ref, metric="chrf")
        rows.append({
            "way": way["name"],
            "options": options(way, beam, candidates, epsilon, seed),
            "bleu": round(BLEU().corpus_score(out, [ref]).score, 2),
            # output length over the references' (sacrebleu's 13a tokens), BLEU's brevity side
            "length_ratio": round(BLEU().corpus_score(out, [ref]).ratio, 3),
            "chrf": round(CHRF().corpus_score(out, [ref]).score, 2),
            # minus beam search's, with the paired bootstrap's 95% interval, and p
            "bleu_difference": [round(bleu.observed, 2), round(bleu.low, 2), round(bleu.high, 2)],
            "bleu_p": round(bleu.p_value, 3),
            "chrf_difference": [round(chrf.observed, 2), round(chrf.low, 2), round(chrf.high, 2)],
            "chrf_p": round(chrf.p_value, 3),
            "same_as_beam": sum(a == b for a, b in zip(out, outputs[0])),
            "seconds": round(took, 1),
            "time_ratio": round(took / seconds[0], 2),
        })
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="run directory or checkpoint")
    ap.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    ap.add_argument("--ref", default="../shared/data/bible-es-en/test.en")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--candidates", type=int, default=16, help="samples (and n-best) per line")
    ap.add_argument("--epsilon", type=float, default=0.02, help="the samples' epsilon cut")
    ap.add_argument("--seed", type=int, default=1, help="the samples' seed")
    ap.add_argument("--lines", type=int, help="only the first N lines")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--hyp-dir", type=Path, help="write each way's translations here, one file per way")
    args = ap.parse_args(argv)

    import torch

    from rnmt.reproduce.machine import cpu_bf16, cpu_model

    torch.set_num_threads(args.threads)
    src = Path(args.src).read_text(encoding="utf-8").splitlines()[:args.lines]
    ref = Path(args.ref).read_text(encoding="utf-8").splitlines()[:args.lines]
    rows = measure(args.model, src, ref, args.beam, args.candidates, args.epsilon, args.seed, args.hyp_dir)
    result = {"commit": commit(), "command": "python -m benchmarks.mbr " + " ".join(argv or sys.argv[1:]),
              "machine": f"{cpu_model()} ({cpu_bf16()}), {args.threads} thread(s), PyTorch {torch.__version__}",
              "model": args.model, "sentences": len(src), "beam": args.beam, "candidates": args.candidates,
              "epsilon": args.epsilon, "seed": args.seed, "rows": rows}
    print(f"{args.model}: {len(src)} lines, beam {args.beam}, {args.candidates} candidates, epsilon {args.epsilon}")
    print("  way                    BLEU   chrF   len   BLEU - beam [95%], p         chrF - beam [95%], p        "
          "same   s     x beam")
    for r in rows:
        b, c = r["bleu_difference"], r["chrf_difference"]
        print(f"  {r['way']:21s}  {r['bleu']:5.2f}  {r['chrf']:5.2f}  {r['length_ratio']:.2f}  "
              f"{b[0]:+.2f} [{b[1]:+.2f}, {b[2]:+.2f}], "
              f"p {r['bleu_p']:.3f}  {c[0]:+.2f} [{c[1]:+.2f}, {c[2]:+.2f}], p {r['chrf_p']:.3f}  "
              f"{r['same_as_beam']:4d}  {r['seconds']:6.1f}  {r['time_ratio']:5.2f}")
    print(result["machine"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
