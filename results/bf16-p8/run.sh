#!/usr/bin/env bash
# The one-regime DTMT table: bf16, patience 8, the four claim systems, two seeds (resumable).
cd "$(dirname "$0")/../.."
# One CPU class for the whole table: bf16 products in hardware (avx512_bf16). Elsewhere bf16 is
# emulated: slower, and not shown to be the same computation, so the runs wait for such a machine.
if ! grep -qw avx512_bf16 /proc/cpuinfo; then
    echo "results/bf16-p8/run.sh: this CPU has no avx512_bf16; the one-regime table trains only on that class" >&2
    exit 2
fi
exec nice -n 19 .venv/bin/rnmt reproduce dtmt --converge --updates 30000 --dev-sentences 0 --jobs 2 \
  --set train.amp=bf16 --systems shallow-rnmt-lgru,dtmt1,dtmt4,shallow-rnmt --out results/bf16-p8
