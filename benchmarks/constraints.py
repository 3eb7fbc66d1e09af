#!/usr/bin/env python3
"""What terminology constraints cost and give (docs/translation.md, "Terminology constraints").

For every test sentence, one or two word n-grams (1 to 3 words, punctuation stripped from
their ends, never only punctuation) are drawn from its reference with a fixed seed, as a
user who knows the right terms would give them. The same model then translates the same
sentences with the same beam, with and without those constraints:

    python -m benchmarks.constraints --model runs/bible --src test.es --ref test.en \\
        --repeats 3 --json constraints.json

(a) Time per sentence: the two ways are timed in turn (plain, constrained, constrained,
plain, ...) on the same sentences, so that both see the same load; the figure to read is
their ratio, per repeat and as the median. (b) BLEU and chrF (sacrebleu) of both outputs
against the references, and the share of constrained outputs that contain every phrase
(which the search guarantees). Prints one JSON object (and writes it with ``--json``);
``--outputs DIR`` keeps the translations and the constraint file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import string
import subprocess
import time
from pathlib import Path
from typing import List, Sequence

REPO = Path(__file__).resolve().parent.parent
PUNCTUATION = set(string.punctuation) | set("¡¿«»“”‘’—–…")


def strip_punctuation(words: Sequence[str]) -> List[str]:
    """The n-gram with punctuation cut from its ends (``said, Let`` -> ``said, Let``, ``light.`` -> ``light``)."""
    words = list(words)
    if not words:
        return words
    words[0] = words[0].lstrip("".join(PUNCTUATION))
    words[-1] = words[-1].rstrip("".join(PUNCTUATION))
    return [w for w in words if w]


def draw_constraints(reference: str, rng: random.Random, most: int = 2, longest: int = 3) -> List[str]:
    """Up to ``most`` n-grams (1 to ``longest`` words) of ``reference``, none only punctuation."""
    words = reference.split()
    phrases: List[str] = []
    for _ in range(rng.randint(1, most)):
        for _attempt in range(10):
            if not words:
                break
            n = rng.randint(1, min(longest, len(words)))
            start = rng.randrange(len(words) - n + 1)
            phrase = " ".join(strip_punctuation(words[start:start + n]))
            if phrase and any(ch not in PUNCTUATION for ch in phrase) and phrase not in phrases:
                phrases.append(phrase)
                break
    return phrases


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=REPO, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="run directory or checkpoint")
    ap.add_argument("--src", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--beam", type=int, help="default: the model's config")
    ap.add_argument("--seed", type=int, default=1, help="seed of the constraint draw")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes of each way")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, help="only the first N sentences")
    ap.add_argument("--json", help="write the result here too")
    ap.add_argument("--outputs", help="directory for the translations and the constraint file")
    args = ap.parse_args()

    import torch

    import rnmt

    torch.set_num_threads(args.threads)
    src = Path(args.src).read_text(encoding="utf-8").splitlines()
    ref = Path(args.ref).read_text(encoding="utf-8").splitlines()
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    rng = random.Random(args.seed)
    constraints = [draw_constraints(r, rng) for r in ref]
    model = rnmt.load(args.model, device="cpu")
    tgt = model.loaded.tgt_vocab
    dropped = 0  # phrases the target vocabulary cannot spell (left out, and counted)
    for i, phrases in enumerate(constraints):
        kept = [p for p in phrases if tgt.unk_id not in tgt.encode(p)]
        dropped += len(phrases) - len(kept)
        constraints[i] = kept
    beam = args.beam or model.config.search.beam

    def run(constrained: bool) -> tuple:
        start = time.perf_counter()
        out = model.translate(src, beam=beam, constraints=constraints if constrained else None)
        return time.perf_counter() - start, out

    run(False)  # warm-up: first-call costs belong to neither way
    seconds = {"plain": [], "constrained": []}
    outputs = {}
    for r in range(args.repeats):
        order = ["plain", "constrained"] if r % 2 == 0 else ["constrained", "plain"]
        for way in order:
            elapsed, out = run(way == "constrained")
            seconds[way].append(elapsed)
            outputs[way] = out
    scores = {way: rnmt.evaluate(outputs[way], ref) for way in outputs}
    met = sum(all(p in hyp for p in phrases) for hyp, phrases in zip(outputs["constrained"], constraints))
    met_plain = sum(all(p in hyp for p in phrases) for hyp, phrases in zip(outputs["plain"], constraints))
    n = len(src)
    ratios = [c / p for p, c in zip(seconds["plain"], seconds["constrained"])]
    result = {
        "commit": commit(), "cpu": cpu_name(), "cpus": os.cpu_count(), "threads": args.threads,
        "model": Path(args.model).name,
        "sentences": n, "beam": beam, "seed": args.seed,
        "phrases": sum(len(c) for c in constraints), "phrase_subwords": sum(len(tgt.encode(p)) for c in constraints
                                                                           for p in c),
        "phrases_dropped_unknown": dropped,
        "ms_per_sentence": {way: [round(1000 * s / n, 2) for s in secs] for way, secs in seconds.items()},
        "ratio_constrained_over_plain": [round(x, 3) for x in ratios],
        "median_ratio": round(statistics.median(ratios), 3),
        "bleu": {way: round(s["bleu"], 2) for way, s in scores.items()},
        "chrf": {way: round(s["chrf"], 2) for way, s in scores.items()},
        "outputs_with_every_phrase": {"constrained": met, "plain": met_plain, "of": n},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    if args.outputs:
        out_dir = Path(args.outputs)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "constraints.tsv").write_text("".join("\t".join(c) + "\n" for c in constraints), encoding="utf-8")
        for way, out in outputs.items():
            (out_dir / f"{way}.hyp").write_text("".join(line + "\n" for line in out), encoding="utf-8")


if __name__ == "__main__":
    main()
