#!/usr/bin/env bash
# On the GPU machine (no network): installs the wheels that benchmarks/peers/gpu_wheels.sh put
# in .whl/ into SITE (default /tmp/peers-site) for the machine's python3, applies fairseq's
# Python 3.11+ patches there and checks that each peer imports. Run from the repository root:
#
#   bash benchmarks/peers/gpu_install.sh /tmp/peers-site
#   WHEELS=/tmp/whl311 PATH=.venv/bin:$PATH bash benchmarks/peers/gpu_install.sh /tmp/site311   # a CPU try
#
# The peers then run as `python3 -m ...` with PYTHONPATH=SITE (benchmarks/gpu.py --peer-site
# SITE); rnmt's own process does not see SITE. A wheel that pip refuses is unpacked instead:
# pip >= 24.1 rejects omegaconf 2.0.6's metadata ("PyYAML>=5.1.*"), even with --no-deps.
set -uo pipefail

site="${1:-/tmp/peers-site}"
dir="${WHEELS:-.whl}"
mkdir -p "$site"
shopt -s nullglob
wheels=("$dir"/*.whl)
[ ${#wheels[@]} -gt 0 ] || { echo "no wheels in $dir/ (carry .whl; see docs/gpu.md)" >&2; exit 1; }
for w in "${wheels[@]}"; do
    if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$w" \
            >/dev/null 2>&1; then
        echo "pip refused $(basename "$w"): unpacking it"
        python3 -m zipfile -e "$w" "$site" || exit 1
    fi
done
if [ -d "$site/fairseq" ]; then
    python3 benchmarks/peers/fairseq/patch_py311.py "$site" fairseq hydra >/dev/null || exit 1
fi
if [ -d "$site/onmt" ]; then  # transforms whose packages did not travel (spaCy, fasttext, ...)
    python3 benchmarks/peers/opennmt/patch_transforms.py "$site" || exit 1
fi
status=0
if [ -d "$site/onmt" ]; then
    PYTHONPATH="$site" python3 -c "import onmt.bin.train, onmt.bin.translate; print('OpenNMT-py: ready')" || status=1
fi
if [ -d "$site/fairseq" ]; then
    PYTHONPATH="$site" python3 -c "import fairseq_cli.train, fairseq.models.lstm; print('fairseq: ready')" || status=1
fi
exit $status
