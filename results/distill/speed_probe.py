"""How fast can a student of the teacher's vocabulary decode? Beam-5 and greedy sentences/s of
the teacher and of freshly initialised students of several sizes, every output forced to the
same length (N subwords), so that only the cost of a search step differs (a trained model's
speed also depends on how long its outputs are). Used to choose the students' sizes of
docs/distill.md.

    python results/distill/speed_probe.py TEACHER_RUN [SENTENCES] [ROUNDS]
"""

from __future__ import annotations

import sys
import time

import torch

from rnmt.api import Model, load
from rnmt.config import load_config
from rnmt.models import build_model, count_parameters
from rnmt.models.loading import LoadedModel

SIZES = (("gru", 128, 128), ("atr", 128, 128), ("atr", 64, 128), ("gru", 64, 64), ("atr", 16, 16))
N = 30  # forced output length in subwords


def main() -> None:
    teacher = load(sys.argv[1], device="cpu")
    sentences = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(1)
    with open("../shared/data/bible-es-en/test.es", encoding="utf-8") as f:
        src = [line.strip() for line in f][:sentences]
    v = teacher.loaded
    models = {"teacher": teacher}
    for cell, emb, hidden in SIZES:
        cfg = load_config(f"results/distill/student-{cell}.yaml",
                          [f"model.emb_size={emb}", f"model.hidden_size={hidden}"])
        model = build_model(cfg.model, v.src_vocab.size, v.tgt_vocab.size).eval()
        models[f"{cell} emb {emb} hidden {hidden}"] = Model(
            LoadedModel(model, v.src_vocab, v.tgt_vocab, cfg, {}, v.path), torch.device("cpu"))
    best: dict = {}
    for _ in range(rounds):  # alternating rounds, each model's fastest counts
        for name, model in models.items():
            for search, options in (("beam 5", {"beam": 5}), ("greedy", {"greedy": True})):
                start = time.perf_counter()
                model.translate(src, min_output_tokens=N, max_output_tokens=N + 1, max_input_tokens=256, **options)
                speed = len(src) / (time.perf_counter() - start)
                best[name, search] = max(best.get((name, search), 0.0), speed)
    base = {s: best["teacher", s] for s in ("beam 5", "greedy")}
    print(f"{len(src)} test sentences, outputs forced to {N} subwords, 1 thread, fastest of {rounds} rounds")
    print("| model | parameters | beam 5 sent/s | x teacher | greedy sent/s | x teacher |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, model in models.items():
        params = count_parameters(model.loaded.model)["total"]
        print(f"| {name} | {params:,} | {best[name, 'beam 5']:.1f} | {best[name, 'beam 5'] / base['beam 5']:.2f} | "
              f"{best[name, 'greedy']:.1f} | {best[name, 'greedy'] / base['greedy']:.2f} |")


if __name__ == "__main__":
    main()
