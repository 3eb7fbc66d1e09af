#!/usr/bin/env bash
# Creates benchmarks/peers/fairseq/venv with fairseq 0.12.2 on torch 2.13.0 (Python 3.11).
#
# fairseq 0.12.2 has no wheel for Python 3.11: it is built from its source release (C++ and
# Cython extensions; needs a C++ compiler), without build isolation. The source release
# lacks the sources of its three torch C++ extensions (libbase, libnat and an example's
# alignment operator; only BASE layers, non-autoregressive models and that example use
# them), so its setup.py is patched to skip them (patch_setup.py); the Cython extensions and libbleu are
# built as usual (its setup_requires, installed beforehand, are removed as well: current
# pip would otherwise try to build numpy from source for them). Its requirements are installed separately:
# hydra-core 1.0.7 and omegaconf 2.0.6 with --no-deps (their
# real requirements are PyYAML, typing_extensions and antlr4 4.8), and
# torchaudio is left out (only fairseq's speech tasks use it, and it would pull another
# torch). Finally patch_py311.py rewrites the dataclass defaults that Python 3.11 rejects.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../common.sh"
venv="$here/venv"

make_venv "$venv"
# omegaconf 2.0.6's metadata ("PyYAML>=5.1.*") is refused by pip >= 24.1, with or without
# --no-deps: this venv keeps an older pip.
pip_in "$venv" "pip<24.1"
pip_in "$venv" "numpy<2" cython "setuptools<70" wheel
if "$venv/bin/python" -m pip show fairseq 2>/dev/null | grep -q '^Version: 0.12.2$'; then
    echo "fairseq 0.12.2 already built in $venv"
else
src="$here/work/src"
rm -rf "$src" && mkdir -p "$src"
"$venv/bin/python" -m pip download --quiet --no-deps --no-binary fairseq --no-build-isolation "fairseq==0.12.2" -d "$src"
tar -xzf "$src/fairseq-0.12.2.tar.gz" -C "$src"
"$venv/bin/python" "$here/patch_setup.py" "$src/fairseq-0.12.2/setup.py"
pip_in "$venv" --no-deps --no-build-isolation "$src/fairseq-0.12.2"
fi
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
