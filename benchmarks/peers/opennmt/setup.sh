#!/usr/bin/env bash
# Creates benchmarks/peers/opennmt/venv with OpenNMT-py 3.5.1 on torch 2.13.0.
#
# OpenNMT-py 3.5.1 pins torch<2.3, so it is installed with --no-deps and its other
# requirements are installed separately (the pinned torch is held by a constraint).
# Requirements that are only used by features the benchmark does not touch (language
# identification, spaCy sentence splitting, CTranslate2 export, ...) are optional: the
# setup goes on if one of them does not install.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../common.sh"
venv="$here/venv"

make_venv "$venv"
pip_in "$venv" --no-deps "OpenNMT-py==3.5.1"
# What training and translation import.
pip_in "$venv" configargparse pyyaml sacrebleu six tensorboard numpy
# The rest of OpenNMT-py's listed requirements.
try_pip_in "$venv" "ctranslate2>=4,<5" flask waitress "pyonmttok>=1.37,<2" rapidfuzz pyahocorasick \
    fasttext-wheel spacy
"$venv/bin/python" - <<'PY'
import onmt, torch
from importlib.metadata import version
print(f"OpenNMT-py {version('OpenNMT-py')} on torch {torch.__version__}: ready")
PY
