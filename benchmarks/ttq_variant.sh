#!/bin/bash
# Untimed look at a variant of the time-to-quality recipe: the averaged recipe
# (benchmarks/time_to_quality.py, rnmt-rnnsearch-averaged) at another peak learning rate,
# trained on one thread for 600 updates, its checkpoints at 300-600 decoded as the benchmark
# decodes them (beam 5, the config's length-normalised search) and scored with sacrebleu.
# Learning per update does not depend on the machine, so this can run beside other work;
# the timed reading is time_to_quality.py's.
#
#   bash benchmarks/ttq_variant.sh LR SEED [DATA] [OUT]
#     DATA: a data folder time_to_quality.py prepared (default runs/ttq-avx2-seed2/data)
#     OUT:  default runs/ttq-lr/lr$LR-s$SEED; test BLEU per checkpoint in $OUT.bleu
set -euo pipefail
cd "$(dirname "$0")/.."
LR=$1; SEED=$2; D=${3:-runs/ttq-avx2-seed2/data}; OUT=${4:-runs/ttq-lr/lr$LR-s$SEED}
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0
mkdir -p "$(dirname "$OUT")"
# the benchmark's own arguments for the system (one source for the recipe), then the variant's
mapfile -t sets < <(SEED="$SEED" D="$D" "$PY" - <<'PYEOF'
import os, sys
from pathlib import Path
from benchmarks import time_to_quality as ttq
system = ttq.SYSTEMS["rnmt-rnnsearch-averaged"]
system.seed = int(os.environ["SEED"])
print("\n".join(system._sets(Path(os.environ["D"]), 1)))
PYEOF
)
"$PY" -m rnmt train benchmarks/configs/ttq-rnnsearch.yaml --out "$OUT" "${sets[@]}" \
  --set "train.lr=$LR" --set train.max_steps=600 > "$OUT.log" 2>&1
: > "$OUT.bleu"
for s in 300 400 500 600; do
  "$PY" -m rnmt translate --model "$OUT/ckpt-$s.safetensors" --input "$D/raw/test.src" \
    --output "$OUT/ckpt-$s.test.hyp" --beam 5 --threads 1 --device cpu 2>> "$OUT.log"
  echo "$s $("$PY" -m sacrebleu "$D/raw/test.tgt" -i "$OUT/ckpt-$s.test.hyp" -b -w 2)" >> "$OUT.bleu"
done
cat "$OUT.bleu"
