"""Let OpenNMT-py 3.5.1 import without the packages of transforms the benchmark does not use.

``onmt/transforms/__init__.py`` imports every transform module when ``onmt`` is imported, and
four of them import third-party packages at the top: spaCy and pyahocorasick
(``terminology``), pyahocorasick (``inlinetags``), rapidfuzz (``fuzzymatch``) and fasttext
(``clean``). The benchmark gives OpenNMT-py pre-segmented pieces and no transforms. On the
GPU machine, where packages travel as wheels within the call's 64 MiB (spaCy and its
dependencies alone exceed that), this patch makes a transform whose packages are missing
stay unregistered instead of stopping the import; asking for such a transform then fails
with OpenNMT-py's own "transform not supported". The CPU venvs
(benchmarks/peers/opennmt/setup.sh) install those packages and are not patched.

Usage: python patch_transforms.py SITE_PACKAGES_DIR   (idempotent)
"""

from __future__ import annotations

import sys
from pathlib import Path

OLD = '        module = importlib.import_module("onmt.transforms." + file_name)\n'
NEW = ('        try:  # patched (benchmarks/peers/opennmt/patch_transforms.py): skip what cannot import\n'
       '            module = importlib.import_module("onmt.transforms." + file_name)\n'
       '        except ImportError:\n'
       '            continue\n')


def main(argv: list[str]) -> int:
    path = Path(argv[1]) / "onmt" / "transforms" / "__init__.py"
    text = path.read_text(encoding="utf-8")
    if NEW in text:
        print(f"{path}: already patched")
        return 0
    if OLD not in text:
        print(f"{path}: unexpected OpenNMT-py version (the import loop was not found)", file=sys.stderr)
        return 1
    path.write_text(text.replace(OLD, NEW, 1), encoding="utf-8")
    print(f"patched {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
