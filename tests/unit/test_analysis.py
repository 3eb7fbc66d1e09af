"""Analysis building blocks without a trained model: subword-to-word alignment, Pearson's r,
position means and the exact ATR decomposition (ATR paper eq. 10) on random weights."""

import numpy as np
import pytest
import torch

from rnmt.analysis import (
    aggregate_to_words,
    argmax_links,
    chain_weights,
    dependency_weights,
    format_pharaoh,
    pearson,
    position_means,
    strongest_previous,
    threshold_links,
    word_index_of_pieces,
)
from rnmt.analysis.words import words_of_pieces
from rnmt.cells import ATR

SRC = ["▁la", "▁casa", "s", "▁blanca"]  # words: la | casas | blanca
TGT = ["▁the", "▁white", "▁hou", "ses"]  # words: the | white | houses


def test_pieces_map_to_whitespace_words():
    assert word_index_of_pieces(SRC) == [0, 1, 1, 2]
    assert word_index_of_pieces(["ab", "▁c", "d"]) == [0, 1, 1]  # no mark on the first piece
    assert word_index_of_pieces(["▁", "(", "▁x"]) == [0, 0, 1]
    assert words_of_pieces(TGT) == ["the", "white", "houses"]


def test_subword_attention_aggregates_to_words_by_hand():
    # rows: target pieces, columns: source pieces
    a = np.array([[0.7, 0.1, 0.1, 0.1],
                  [0.0, 0.1, 0.1, 0.8],
                  [0.1, 0.3, 0.4, 0.2],
                  [0.2, 0.5, 0.1, 0.2]])
    words = aggregate_to_words(a, TGT, SRC)
    # source sum over "casa"+"s"; target mean over "hou"+"ses"
    expected = np.array([[0.7, 0.2, 0.1],
                         [0.0, 0.2, 0.8],
                         [(0.1 + 0.2) / 2, (0.7 + 0.6) / 2, (0.2 + 0.2) / 2]])
    np.testing.assert_allclose(words, expected)
    assert argmax_links(words) == [(0, 0), (2, 1), (1, 2)]
    assert format_pharaoh(argmax_links(words)) == "0-0 2-1 1-2"
    # gate values: mean over source pieces instead of the sum
    means = aggregate_to_words(a, TGT, SRC, source="mean")
    np.testing.assert_allclose(means[2], [0.15, (0.35 + 0.3) / 2, 0.2])
    assert format_pharaoh(threshold_links(words, 0.2)) == "0-0 1-0 1-1 2-1 1-2 2-2"
    with pytest.raises(ValueError):
        aggregate_to_words(a[:, :3], TGT, SRC)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pearson_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    x = rng.random(50)
    y = -0.8 * x + 0.2 * rng.random(50)
    assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert pearson([1.0], [2.0]) is None


def test_position_means_and_strongest_previous():
    means, counts = position_means([[1.0, 2.0, 3.0], [3.0], [2.0, 4.0]])
    np.testing.assert_allclose(means, [2.0, 3.0, 3.0])
    assert counts.tolist() == [3, 2, 1]
    m = np.array([[0.5, 0, 0], [0.2, 0.6, 0], [0.3, 0.1, 0.9]])
    assert strongest_previous(m) == [None, 0, 0]


def test_chain_weights_by_hand():
    i = torch.tensor([[[0.5], [0.4], [0.3]]])
    f = torch.tensor([[[0.9], [0.8], [0.7]]])
    g, mean, decay = chain_weights(i, f)
    expected = [[0.5, 0, 0], [0.5 * 0.8, 0.4, 0], [0.5 * 0.8 * 0.7, 0.4 * 0.7, 0.3]]
    np.testing.assert_allclose(g[0, :, :, 0].numpy(), expected)
    np.testing.assert_allclose(mean[0].numpy(), expected)
    np.testing.assert_allclose(decay[0, :, 0].numpy(), [0.9, 0.72, 0.504])
    g_rev, _, _ = chain_weights(i, f, reverse=True)  # walks t = 2, 1, 0
    np.testing.assert_allclose(g_rev[0, 0, :, 0].numpy(), [0.5, 0.4 * 0.9, 0.3 * 0.8 * 0.9])


@pytest.mark.parametrize("layer_norm", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_dependency_weights_reconstruct_states_random_weights(layer_norm, reverse):
    torch.manual_seed(3)
    cell = ATR(6, 10, layer_norm=layer_norm, dropout=0.3)
    with torch.no_grad():
        for p in cell.parameters():
            p.uniform_(-1.0, 1.0)
    cell.train()  # dependency_weights switches dropout off while it runs
    x = torch.randn(3, 17, 6)
    mask = torch.ones(3, 17, dtype=torch.bool)
    mask[1, 11:] = False
    mask[2, 4:] = False
    for h0 in (None, torch.randn(3, 10)):
        dep = dependency_weights(cell, x, mask, reverse=reverse, state0=h0)
        assert cell.training
        assert dep.g.shape == (3, 17, 17, 10)
        torch.testing.assert_close(dep.reconstruct(), dep.states.double(), atol=1e-5, rtol=0)
        torch.testing.assert_close(dep.mean, dep.g.mean(-1))
        # future inputs never weigh in; padded inputs never do
        later = torch.triu(torch.ones(17, 17, dtype=torch.bool), 1)
        if reverse:
            later = later.T
        assert dep.g[:, later].abs().max() == 0
        assert dep.g[2, :, 4:].abs().max() == 0
    mean_only = dependency_weights(cell, x, mask, reverse=reverse, state0=h0, full=False)
    assert mean_only.g is None
    torch.testing.assert_close(mean_only.mean, dep.mean)


def test_dependency_weights_rejects_other_units():
    from rnmt.cells import GRU

    with pytest.raises(TypeError):
        dependency_weights(GRU(4, 5), torch.randn(1, 3, 4))
