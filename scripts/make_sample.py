"""Regenerate data/sample/ from the bible-es-en corpus.

Usage: python scripts/make_sample.py PATH/TO/bible-es-en [--out data/sample]

Selection (deterministic, spread evenly over every book of each split): from a split of
N lines, keep the K lines with 0-based index floor(i * N / K) for i = 0 .. K-1.
train: K = 10,000 of 28,138; dev: K = 300 of 571; test: all 517 lines. Lines are copied
byte for byte, with their `.ref` verse labels.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import List, Optional

SPLITS = {"train": 10000, "dev": 300, "test": None}  # None keeps the whole split
SUFFIXES = ("es", "en", "ref")


def spread(n: int, k: Optional[int]) -> List[int]:
    """`k` indices spread evenly over range(n): floor(i * n / k)."""
    if k is None or k >= n:
        return list(range(n))
    return [i * n // k for i in range(k)]


def read_raw_lines(path: Path) -> List[bytes]:
    lines = path.read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the bible-es-en directory")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "data" / "sample")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for split, k in SPLITS.items():
        sides = {suf: read_raw_lines(args.source / f"{split}.{suf}") for suf in SUFFIXES}
        sizes = {len(v) for v in sides.values()}
        if len(sizes) != 1:
            raise SystemExit(f"{split}: files differ in line count: {sizes}")
        keep = spread(sizes.pop(), k)
        for suf, lines in sides.items():
            (args.out / f"{split}.{suf}").write_bytes(b"".join(lines[i] + b"\n" for i in keep))
        print(f"{split}: {len(keep)} lines")


if __name__ == "__main__":
    main()
