"""The bundled sample corpus stays as documented in data/sample/README.md."""

import pytest

from rnmt.data import read_lines, read_parallel
from tests.support import SAMPLE


@pytest.mark.parametrize("split,count", [("train", 10000), ("dev", 300), ("test", 517)])
def test_sample_splits_are_aligned_and_complete(split, count):
    src, tgt, n_empty = read_parallel(SAMPLE / f"{split}.es", SAMPLE / f"{split}.en")
    assert len(src) == len(tgt) == count and n_empty == 0
    assert len(read_lines(SAMPLE / f"{split}.ref")) == count


def test_sample_train_covers_every_training_book():
    books = {ref.split(".")[0] for ref in read_lines(SAMPLE / "train.ref")}
    assert len(books) == 55 and not books & {"Esth", "Dan", "Jonah", "Gal", "Eph", "Jas", "1John"}
