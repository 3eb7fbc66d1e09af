#!/usr/bin/env bash
# The one-regime DTMT table: bf16, patience 8, the four claim systems, two seeds (resumable).
cd "$(dirname "$0")/../.."
exec nice -n 19 .venv/bin/rnmt reproduce dtmt --converge --updates 30000 --dev-sentences 0 --jobs 2 \
  --set train.amp=bf16 --systems shallow-rnmt-lgru,dtmt1,dtmt4,shallow-rnmt --out results/bf16-p8
