"""`best_extensions`, the block pre-selection of beam search, against one plain `topk`."""

import pytest
import torch

from rnmt.search.beam import BLOCK, best_extensions, one_topk_extensions


@pytest.mark.parametrize("b,K,V", [(1, 5, 8000), (7, 5, 1000), (3, 4, 8003), (2, 1, 3 * BLOCK + 1), (4, 2, 6)])
def test_block_selection_equals_one_topk(b, K, V):
    torch.manual_seed(V)
    scores = torch.randn(b, K) * 3
    log_probs = torch.randn(b * K, V).log_softmax(-1)
    k = min(2 * K, K * V)
    got, want = best_extensions(scores, log_probs, k), one_topk_extensions(scores, log_probs, k)
    for g, w in zip(got, want):
        assert torch.equal(g, w)


def test_few_finite_candidates_give_real_tokens():
    """Rows forced to EOS and dead hypotheses (-inf) leave fewer finite candidates than k;
    the rest are -inf and must still name tokens of the vocabulary (the next step embeds them)."""
    b, K, V = 2, 5, 1000
    scores = torch.full((b, K), float("-inf"))
    scores[0, 0] = -1.0
    log_probs = torch.full((b * K, V), float("-inf"))
    log_probs[:, 3] = -0.5  # only EOS (id 3) allowed
    top, beam, tok = best_extensions(scores, log_probs, 2 * K)
    assert top[0, 0] == pytest.approx(-1.5) and beam[0, 0] == 0 and tok[0, 0] == 3
    assert torch.isinf(top[0, 1:]).all() and torch.isinf(top[1]).all()
    assert int(tok.max()) < V and int(beam.max()) < K
