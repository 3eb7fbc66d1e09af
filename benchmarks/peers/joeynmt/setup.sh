#!/usr/bin/env bash
# Creates benchmarks/peers/joeynmt/venv with JoeyNMT 2.3.0 on torch 2.13.0.
#
# JoeyNMT is installed with --no-deps so that nothing can replace the pinned torch; its
# runtime requirements follow, plus importlib_metadata, which JoeyNMT 2.3.0 imports
# without listing it. Its development tools (pylint, yapf, flake8, pytest) are left out.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../common.sh"
venv="$here/venv"

make_venv "$venv"
pip_in "$venv" --no-deps "joeynmt==2.3.0"
pip_in "$venv" importlib_metadata future pillow numpy "setuptools>=41.0.0" "protobuf>=3.19.4,<3.21" \
    tensorboard "sacrebleu>=2.0.0" sacremoses sentencepiece subword-nmt matplotlib seaborn "pyyaml>=5.1" \
    "six>=1.12" "wrapt>=1.11.1" datasets packaging pandas
try_pip_in "$venv" plotly
"$venv/bin/python" - <<'PY'
import torch, joeynmt.training  # noqa: F401
from importlib.metadata import version
print(f"JoeyNMT {version('joeynmt')} on torch {torch.__version__}: ready")
PY
