#!/usr/bin/env bash
# The distilled student in a browser tab against its teacher (docs/distill.md): both exported
# (fp32 and --int8) with their in-browser pages, each page timed in headless chromium on the
# Bible test set at beam 5 (benchmarks/web_page.py), in alternating rounds, with the Python
# runtime's outputs as the expected ones; the figures land in results/distill/web-page.json.
#
#   results/distill/web_page.sh TEACHER_RUN STUDENT_RUN SCRATCH [ROUNDS]     # from the repository root
#
# Needs chromium and web/node_modules (`make test` installs them). Stop other jobs first:
# the pages are timed on one thread, and a loaded machine moves the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
TEACHER=${1:?usage: results/distill/web_page.sh TEACHER_RUN STUDENT_RUN SCRATCH [ROUNDS]}
STUDENT=${2:?}
SCRATCH=${3:?}
ROUNDS=${4:-2}
PY=${PYTHON:-.venv/bin/python}
TEST=../shared/data/bible-es-en/test
mkdir -p "$SCRATCH"
for pair in "teacher:$TEACHER" "student:$STUDENT"; do
    name=${pair%%:*} run=${pair#*:}
    for kind in fp32 int8; do
        dir="$SCRATCH/$name-$kind"
        rm -rf "$dir"
        "$PY" -m rnmt export "$run" --out "$dir" $([ "$kind" = int8 ] && echo --int8)
        "$PY" -m rnmt export --web "$dir"
        "$PY" -m rnmt translate --model "$dir" --input "$TEST.es" --output "$dir.runtime.en" --beam 5 --threads 1
    done
done
for round in $(seq "$ROUNDS"); do
    for page in teacher-fp32 student-fp32 teacher-int8 student-int8; do
        "$PY" -m benchmarks.web_page --page "$SCRATCH/$page/web" --expected "$SCRATCH/$page.runtime.en" --beam 5 \
            --src "$TEST.es" --json "$SCRATCH/$page.round$round.json"
    done
done
"$PY" - "$SCRATCH" "$ROUNDS" "$TEACHER" "$STUDENT" <<'EOF'
import json, subprocess, sys
from pathlib import Path

import sacrebleu
import torch

from rnmt.reproduce.machine import describe_machine

scratch, rounds = Path(sys.argv[1]), int(sys.argv[2])
refs = Path("../shared/data/bible-es-en/test.en").read_text(encoding="utf-8").splitlines()
commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
flags = sorted({f for line in open("/proc/cpuinfo") if line.startswith("flags") for f in line.split()[2:]}
               & {"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"})
machine = describe_machine(torch.device("cpu"), 1)
out = {"commit": commit, "machine": f"{machine['cpu']}, {machine['cores']} cores, flags {' '.join(flags)}, "
                                    f"chromium (headless) with onnxruntime-web on one thread, {machine['date']}",
       "command": f"results/distill/web_page.sh {sys.argv[3]} {sys.argv[4]} SCRATCH {rounds}", "pages": {}}
for page in ("teacher-fp32", "student-fp32", "teacher-int8", "student-int8"):
    runs = [json.loads((scratch / f"{page}.round{r}.json").read_text()) for r in range(1, rounds + 1)]
    hyps = (scratch / f"{page}.runtime.en").read_text(encoding="utf-8").splitlines()
    out["pages"][page] = {
        "sentences_per_s_each_round": [round(r["sentences_per_second"], 2) for r in runs],
        "sentences_per_s": round(max(r["sentences_per_second"] for r in runs), 2),
        "load_seconds": round(min(r["load_seconds"] for r in runs), 2), "page_bytes": runs[0]["total_bytes"],
        "equal_to_runtime": runs[0]["equal_to_expected"], "lines": runs[0]["lines"],
        "remote_requests": sum(len(r["remote_requests"]) for r in runs),
        "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2)}
Path("results/distill/web-page.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
print(json.dumps(out, indent=1))
EOF
