#!/usr/bin/env bash
# Creates benchmarks/peers/fairseq/venv with fairseq 0.12.2 on torch 2.13.0 (Python 3.11).
#
# fairseq 0.12.2 has no wheel for Python 3.11: it is built from its source release (C++ and
# Cython extensions; needs a C++ compiler) against the pinned torch, without build
# isolation so that the build sees that torch. Its requirements are installed separately:
# hydra-core 1.0.7 and omegaconf 2.0.6 with --no-deps (omegaconf 2.0.6's metadata is
# rejected by recent pip; its real requirements are PyYAML and typing_extensions), and
# torchaudio is left out (only fairseq's speech tasks use it, and it would pull another
# torch). Finally patch_py311.py rewrites the dataclass defaults that Python 3.11 rejects.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../common.sh"
venv="$here/venv"

make_venv "$venv"
pip_in "$venv" "numpy<2" cython "setuptools<70" wheel
pip_in "$venv" --no-deps --no-build-isolation "fairseq==0.12.2"
pip_in "$venv" --no-deps "hydra-core==1.0.7" "omegaconf==2.0.6"
pip_in "$venv" "antlr4-python3-runtime==4.8" importlib-resources pyyaml typing_extensions cffi regex \
    "sacrebleu>=1.4.12" tqdm bitarray
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$venv/bin/python" "$here/patch_py311.py" "$site" fairseq hydra
"$venv/bin/python" - <<'PY'
import torch, fairseq, fairseq.options, fairseq.models.lstm  # noqa: F401
from importlib.metadata import version
print(f"fairseq {version('fairseq')} on torch {torch.__version__}: ready")
PY
