#!/usr/bin/env bash
# Fetches the peers' missing packages as Python 3.12 x86-64 wheels into .whl/ (git-ignored),
# for the GPU machine, which has no network (docs/gpu.md). Run from the repository root on a
# machine with PyPI, then name .whl in the device call's carry list.
#
#   bash benchmarks/peers/gpu_wheels.sh            # both peers
#   PEERS=opennmt bash benchmarks/peers/gpu_wheels.sh
#   PYVER=3.11 DEST=/tmp/whl311 bash benchmarks/peers/gpu_wheels.sh   # the same for this machine's
#       Python 3.11, to try the flow on the CPU (benchmarks/gpu.py --device cpu --peer-site ...)
#
# The GPU image already holds torch, numpy, pyyaml, sacrebleu, six, tensorboard, regex,
# tqdm, typing_extensions, cython, setuptools and wheel, so only these travel:
#   OpenNMT-py 3.5.1 (pure Python) and ConfigArgParse;
#   fairseq 0.12.2, built here into a cp312 wheel from its source release (it has no wheel
#   for Python 3.12; its Cython extensions and libbleu are compiled against numpy 2, which
#   the GPU image has), with hydra-core 1.0.7, omegaconf 2.0.6, antlr4-python3-runtime 4.8
#   (source only upstream: made into a pure-Python wheel here) and bitarray.
# The fairseq build needs a Python 3.12 with headers (PYTHON, default python3.12, else
# pyenv's 3.12) and a C++ compiler. The device installs them with
# benchmarks/peers/gpu_install.sh. Sizes (cp312): fairseq 11.4 MB, the other six 0.9 MB.
set -euo pipefail

PEERS="${PEERS:-opennmt fairseq}"
PYVER="${PYVER:-3.12}"
DEST="${DEST:-.whl}"
mkdir -p "$DEST"
pip_download() {
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$DEST" "$@"
}

if [[ " $PEERS " == *" opennmt "* ]]; then
    # pyonmttok: OpenNMT-py builds its vocabularies with it (imported by onmt.inputters)
    pip_download "OpenNMT-py==3.5.1" "ConfigArgParse==1.7.1" "pyonmttok==1.38.1"
fi

if [[ " $PEERS " == *" fairseq "* ]]; then
    pip_download "hydra-core==1.0.7" "omegaconf==2.0.6" "bitarray==3.8.0"
    py="${PYTHON:-}"
    if [ -z "$py" ]; then
        for c in "python$PYVER" "$HOME"/.pyenv/versions/"$PYVER"*/bin/"python$PYVER"; do
            if "$c" -c "import sys; assert '%d.%d' % sys.version_info[:2] == '$PYVER'" 2>/dev/null; then
                py="$c"; break
            fi
        done
        [ -n "$py" ] || { echo "no Python $PYVER for the fairseq wheel: set PYTHON" >&2; exit 1; }
    fi
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    "$py" -m venv "$work/venv"
    "$work/venv/bin/python" -m pip install --quiet "numpy>=2,<3" "cython>=3" "setuptools<70" wheel
    # antlr4-python3-runtime 4.8 exists only as a source release: a pure-Python wheel of it
    "$work/venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$DEST" \
        "antlr4-python3-runtime==4.8"
    "$work/venv/bin/python" -m pip download --quiet --no-deps --no-binary fairseq "fairseq==0.12.2" -d "$work"
    tar -xzf "$work/fairseq-0.12.2.tar.gz" -C "$work"
    # As in benchmarks/peers/fairseq/setup.sh: its torch C++ extensions skipped, its
    # setup_requires dropped (installed above)
    "$work/venv/bin/python" benchmarks/peers/fairseq/patch_setup.py "$work/fairseq-0.12.2/setup.py"
    "$work/venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$DEST" "$work/fairseq-0.12.2"
fi
ls -l "$DEST"
du -sh "$DEST"
