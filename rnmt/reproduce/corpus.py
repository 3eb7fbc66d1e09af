"""The corpus of a reproduction: a directory of ``{train,dev,test}.{src,tgt}`` files.

The default is the Bible corpus next to the repository (``../shared/data/bible-es-en``,
Spanish to English); when it is not there the bundled sample (``data/sample``, the same
corpus cut to 10,000 training verses) is used and the results say so. A corpus without a
test split (the gettext corpora) gets one from the second half of its dev set, written
into the run directory, and the first half stays the dev set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from rnmt.data import count_lines, read_lines
from rnmt.errors import UserError
from rnmt.reproduce.spec import repository_root
from rnmt.training.checkpoint import atomic_write_text

DEFAULT_DATA = "../shared/data/bible-es-en"  # relative to the repository root
FALLBACK_DATA = "data/sample"


@dataclass(frozen=True)
class Corpus:
    name: str  # how the results name it: a path relative to the repository, never absolute
    src: str
    tgt: str
    train: Path  # file prefixes (PREFIX.src, PREFIX.tgt)
    dev: Path
    test: Path
    train_pairs: int
    dev_pairs: int
    test_pairs: int
    note: str = ""  # how the corpus was chosen or split

    def files(self, split: str) -> tuple:
        prefix = getattr(self, split)
        return Path(f"{prefix}.{self.src}"), Path(f"{prefix}.{self.tgt}")

    def describe(self) -> str:
        text = (f"`{self.name}` ({self.src} → {self.tgt}): {self.train_pairs:,} training pairs, "
                f"{self.dev_pairs:,} dev, {self.test_pairs:,} test")
        return text + (f"; {self.note}" if self.note else "")


def display_path(path: Path) -> str:
    """A path as the results print it: relative to the repository when possible."""
    path = Path(os.path.abspath(path))
    try:
        return os.path.relpath(path, repository_root())
    except ValueError:  # another drive on Windows
        return path.name


def _languages(directory: Path, src: Optional[str], tgt: Optional[str]) -> tuple:
    if src and tgt:
        return src, tgt
    # bible-es-en, gettext-en-de: the last two parts of the directory name.
    parts = directory.name.split("-")
    if len(parts) >= 3:
        guess_src, guess_tgt = parts[-2], parts[-1]
        if (directory / f"train.{guess_src}").is_file() and (directory / f"train.{guess_tgt}").is_file():
            return src or guess_src, tgt or guess_tgt
    if (directory / "train.es").is_file() and (directory / "train.en").is_file():
        return src or "es", tgt or "en"
    raise UserError(f"{directory}: cannot tell the languages from the directory name; pass --src and --tgt")


def _need(path: Path) -> None:
    if not path.is_file():
        raise UserError(f"corpus file not found: {path}")


def _write_lines(path: Path, lines) -> None:
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def resolve_corpus(data: Optional[str], src: Optional[str], tgt: Optional[str], work_dir: Path,
                   log: Callable[[str], None] = print) -> Corpus:
    """Find the corpus directory and its splits; ``work_dir`` receives a carved test split."""
    note = ""
    if data:
        directory = Path(data)
    else:
        directory = repository_root() / DEFAULT_DATA
        if not directory.is_dir():
            directory = repository_root() / FALLBACK_DATA
            note = f"the default corpus {DEFAULT_DATA} was not found, so the bundled sample was used"
            log(f"note: {DEFAULT_DATA} not found; using the bundled sample {FALLBACK_DATA}")
    if not directory.is_dir():
        raise UserError(f"--data: not a directory: {directory}")
    directory = directory.resolve()  # the runs keep working from any directory
    src, tgt = _languages(directory, src, tgt)
    train, dev, test = directory / "train", directory / "dev", directory / "test"
    for prefix in (train, dev):
        for lang in (src, tgt):
            _need(Path(f"{prefix}.{lang}"))
    if not (Path(f"{test}.{src}").is_file() and Path(f"{test}.{tgt}").is_file()):
        # No test split: the first half of dev stays dev, the second half becomes test.
        split_dir = work_dir / "data"
        split_dir.mkdir(parents=True, exist_ok=True)
        for lang in (src, tgt):
            lines = read_lines(f"{dev}.{lang}")
            half = len(lines) // 2
            _write_lines(split_dir / f"dev.{lang}", lines[:half])
            _write_lines(split_dir / f"test.{lang}", lines[half:])
        dev, test = split_dir / "dev", split_dir / "test"
        note = (note + "; " if note else "") + "no test split: the second half of dev is the test set"
    counts = {}
    for split, prefix in (("train", train), ("dev", dev), ("test", test)):
        n_src, n_tgt = count_lines(f"{prefix}.{src}"), count_lines(f"{prefix}.{tgt}")
        if n_src != n_tgt:
            raise UserError(f"{prefix}.{src} has {n_src} lines but {prefix}.{tgt} has {n_tgt}")
        counts[split] = n_src
        if split == "test":  # read (UTF-8, line lengths) now, not after hours of training; the
            for lang in (src, tgt):  # training run itself checks train and dev before it starts
                read_lines(f"{prefix}.{lang}")
    return Corpus(display_path(directory), src, tgt, train, dev, test,
                  counts["train"], counts["dev"], counts["test"], note)
