"""The runtime's copies of rnmt translate's rules (rnmt_runtime.limits, which may not import
rnmt) hold to rnmt's own: the output cap, the split length, the cut of a long line, the
token batches."""

from __future__ import annotations

import random

import numpy as np
import torch

from rnmt.data.translation import make_translation_batches
from rnmt.search import limits as theirs
from rnmt_runtime import limits as ours


def test_the_output_cap_and_split_length_are_rnmts():
    assert ours.MAX_OUTPUT_TOKENS == theirs.MAX_OUTPUT_TOKENS
    lengths = np.array([1, 2, 7, 30, 171, 400, 10 ** 6])
    for ratio, offset, cap in ((1.5, 10, 256), (0.0, 3, 20), (1e300, 2 ** 62, None), (2.0, 0, 1)):
        assert ours.output_limits(lengths, ratio, offset, cap).tolist() == \
            theirs.output_limits(torch.from_numpy(lengths), ratio, offset, cap).tolist()
        if cap is not None:
            assert ours.default_input_limit(ratio, offset, cap) == theirs.default_input_limit(ratio, offset, cap)


def test_long_lines_are_cut_where_rnmt_cuts_them():
    rng = random.Random(5)
    starts = {i: rng.random() < 0.6 for i in range(50)}
    ends = {i: rng.random() < 0.1 for i in range(50)}
    for size in (1, 3, 8, 17):
        ids = [rng.randrange(50) for _ in range(rng.randrange(1, 90))]
        assert ours.split_source(ids, size, starts.get, ends.get) == theirs.split_source(ids, size, starts.get,
                                                                                          ends.get)
    for piece in ("word.", 'said."', "end?)", "mid", "..."):
        assert ours.ends_sentence(piece) == theirs.ends_sentence(piece)


def test_token_batches_are_rnmts():
    rng = random.Random(2)
    sentences = [[rng.randrange(4, 30) for _ in range(rng.randrange(0, 25))] for _ in range(40)]
    for budget, most in ((60, None), (200, 7), (1, None)):
        mine = list(ours.token_batches(sentences, budget, most, eos_id=3, pad_id=0))
        reference = list(make_translation_batches(sentences, budget, max_sentences=most))
        assert [m[0] for m in mine] == [r[0] for r in reference]
        for (_, src, mask), (_, rsrc, rmask) in zip(mine, reference):
            assert src.tolist() == rsrc.tolist() and mask.tolist() == rmask.tolist()
