"""The runtime's `best_extensions` (block maxima taken before the row's score is added)
against a plain sort of all ``K * V`` candidates, ties and dead hypotheses included."""

import numpy as np
import pytest

from rnmt_runtime.search import BLOCK, best_extensions, block_width


def sorted_extensions(scores, log_probs, k):
    """Every candidate's score, best first, equal scores by position: the definition."""
    b, K = scores.shape
    V = log_probs.shape[1]
    cand = (log_probs + scores.reshape(-1, 1)).reshape(b, K * V)
    flat = np.tile(np.arange(K * V), (b, 1))
    order = np.lexsort((flat, -cand), axis=1)[:, :k]
    return np.take_along_axis(cand, order, axis=1), order // V, order % V


@pytest.mark.parametrize("b,K,V", [(1, 5, 8000), (7, 5, 1000), (3, 4, 8003), (2, 1, 3 * BLOCK + 1), (4, 2, 6)])
def test_block_selection_equals_a_full_sort(b, K, V):
    rng = np.random.default_rng(V)
    log_probs = np.log(rng.dirichlet(np.ones(V), size=b * K)).astype(np.float32)
    log_probs[:, : min(V, 5)] = np.round(log_probs[:, : min(V, 5)])  # exact ties within and across rows
    scores = (rng.normal(size=(b, K)) * 3).astype(np.float32)
    scores[0, -1] = -np.inf  # a hypothesis not expanded yet
    k = min(2 * K, K * V)
    got, want = best_extensions(scores, log_probs, k), sorted_extensions(scores, log_probs, k)
    finite = np.isfinite(want[0])
    assert np.array_equal(got[0], want[0])
    for g, w in zip(got[1:], want[1:]):
        assert np.array_equal(g[finite], w[finite])


def test_block_width_divides_the_vocabulary_when_it_can():
    assert block_width(8000) == 250 and 8000 % 250 == 0  # the Bible vocabulary: no padded copy
    assert block_width(4000) == 250 and block_width(32000) == 256
    assert block_width(8003) == 151  # 53 x 151
    assert block_width(7919) == BLOCK and block_width(6) == BLOCK  # no divisor near BLOCK (a prime): padded
