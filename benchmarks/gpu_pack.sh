#!/usr/bin/env bash
# Packs, in the repository root, what a GPU-machine call of benchmarks/gpu.py needs that git
# does not carry (docs/gpu.md):
#   .gpudata/pack.tar.xz   the corpus (data/bible-es-en) and benchmarks/prepare.py's output of
#                          it (prepared/: the joint 8k BPE model, raw and segmented text), so
#                          the device reuses it instead of training the vocabulary again
#   .gpudata/COMMIT        the commit packed (the device's copy of the tree has no .git)
#   .whl/                  with --peers: the peers' cp312 wheels (benchmarks/peers/gpu_wheels.sh)
# and prints the size that will travel against the call's 64 MiB.
#
#   bash benchmarks/gpu_pack.sh            # rnmt only (carry .gpudata)
#   bash benchmarks/gpu_pack.sh --peers    # and the peers (carry .gpudata and .whl)
#
# DATA (default ../shared/data), CORPUS (bible-es-en) and PYTHON (.venv/bin/python) can be set.
set -euo pipefail

py="${PYTHON:-.venv/bin/python}"
data="${DATA:-../shared/data}"
corpus="${CORPUS:-bible-es-en}"
[ -f "$data/$corpus/train.es" ] || { echo "no corpus at $data/$corpus (set DATA)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data"
cp -r "$data/$corpus" "$work/data/"
"$py" -m benchmarks.prepare --data "$work/data" --corpus "$corpus" --out "$work/prepared" >/dev/null
rm -rf .gpudata && mkdir -p .gpudata
tar -C "$work" -cJf .gpudata/pack.tar.xz data prepared
rev="$(git rev-parse --short HEAD)"
[ -z "$(git status --porcelain --untracked-files=no)" ] || rev="$rev+changes"
echo "$rev" > .gpudata/COMMIT
if [ "${1:-}" = "--peers" ] && ! ls .whl/fairseq-*cp312*.whl .whl/OpenNMT_py-*.whl >/dev/null 2>&1; then
    bash benchmarks/peers/gpu_wheels.sh
fi
tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
extra=$(du -cb .gpudata $( [ "${1:-}" = "--peers" ] && echo .whl ) | tail -1 | cut -f1)
echo "packed at $rev: .gpudata $(du -sh .gpudata | cut -f1)$( [ "${1:-}" = "--peers" ] && echo ", .whl $(du -sh .whl | cut -f1)")"
echo "travels: $(( (tree + extra) / 1048576 )) MiB of 64 (working tree $(( tree / 1048576 )) MiB)"
[ $(( tree + extra )) -lt $(( 64 * 1048576 )) ] || { echo "over the 64 MiB limit" >&2; exit 1; }
