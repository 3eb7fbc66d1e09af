"""Make fairseq 0.12.2's source release build: ``python patch_setup.py SRC/setup.py``.

The release lacks the sources of its three torch C++ extensions (libbase, libnat and an
example's alignment operator; only BASE layers, non-autoregressive models and that example
use them), so they are skipped; and its ``setup_requires`` (cython, numpy, setuptools) are
dropped, because they are installed beforehand and current pip would otherwise try to build
numpy from source for them. Used by setup.sh (this machine's venv) and ../gpu_wheels.sh (the
GPU machine's wheel). Refuses a setup.py it does not recognise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def main(path: str) -> int:
    setup = Path(path)
    text = setup.read_text(encoding="utf-8")
    old = "    from torch.utils import cpp_extension\n"
    if old not in text:
        print(f"patch_setup: {path}: unexpected fairseq setup.py (no torch C++ extension import)", file=sys.stderr)
        return 1
    text = text.replace(old, "    raise ImportError('torch C++ extension sources are not in the source release')\n", 1)
    text = re.sub(r"\n\s*setup_requires=\[[^\]]*\],", "", text, count=1)
    if "setup_requires" in text:
        print(f"patch_setup: {path}: unexpected fairseq setup.py (setup_requires left)", file=sys.stderr)
        return 1
    setup.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else 2)
