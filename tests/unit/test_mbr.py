"""Minimum Bayes risk: the utility matrices are sacrebleu's sentence scores, the weights the
model's evidence, the choice the highest expected utility computed the slow, direct way."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF

from rnmt.search.mbr import bleu_matrix, choose, chrf_matrix, evidence_weights, expected_utilities

TEXTS = ["In the beginning God created the heavens and the earth.",
         "In the beginning, God created the heaven and the earth.",
         "At first God made the sky and the land.",
         "In the beginning God created the heavens and the earth.",
         "", "a", ".", "x y", "earth, earth; earth!", "Dios creó los cielos y la tierra."]


def _random_texts(rng: random.Random, n: int) -> list:
    words = ["the", "earth", "God", "made", ",", ".", "heaven", "light", "día", "a", "luz!", "(and)"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chrf_matrix_is_sacrebleus_sentence_chrf_both_ways(seed):
    texts = TEXTS + _random_texts(random.Random(seed), 12)
    metric = CHRF()
    direct = np.array([[metric.sentence_score(h, [r]).score for r in texts] for h in texts])
    assert np.array_equal(chrf_matrix(texts), direct)  # exactly: sacrebleu's own arithmetic


def test_bleu_matrix_is_sacrebleus_sentence_bleu():
    texts = TEXTS + _random_texts(random.Random(3), 6)
    metric = BLEU(effective_order=True)
    direct = np.array([[metric.sentence_score(h, [r]).score for r in texts] for h in texts])
    assert np.array_equal(bleu_matrix(texts), direct)


def test_weights_uniform_for_samples_and_the_models_probability_for_a_search():
    assert evidence_weights([-1.0, -5.0, -9.0], sampled=True).tolist() == pytest.approx([1 / 3] * 3)
    w = evidence_weights([-1.0, -2.0, -3.0], sampled=False)
    p = np.exp([-1.0, -2.0, -3.0])
    assert w.tolist() == pytest.approx((p / p.sum()).tolist())
    # long outputs: probabilities far below float's range still compare
    w = evidence_weights([-2000.0, -2000.0 - math.log(3)], sampled=False)
    assert w.tolist() == pytest.approx([0.75, 0.25])
    assert evidence_weights([-math.inf, -1.0], sampled=False).tolist() == [0.0, 1.0]


@pytest.mark.parametrize("utility, metric", [("chrf", CHRF()), ("bleu", BLEU(effective_order=True))])
@pytest.mark.parametrize("sampled", [True, False])
def test_expected_utility_is_the_weighted_mean_over_every_candidate(utility, metric, sampled):
    rng = random.Random(7)
    texts = TEXTS[:4] + _random_texts(rng, 5) + TEXTS[:2]  # repeats: merged, but weighed as often as they occur
    log_probs = [-rng.uniform(1, 20) for _ in texts]
    w = evidence_weights(log_probs, sampled)
    direct = [sum(wj * metric.sentence_score(h, [r]).score for wj, r in zip(w, texts)) for h in texts]
    assert expected_utilities(texts, w, utility).tolist() == pytest.approx(direct, abs=1e-9)
    best, expected = choose(texts, log_probs, sampled, utility)
    assert best == int(np.argmax(direct)) and expected == pytest.approx(max(direct))


def test_the_consensus_wins_over_the_most_probable_outlier():
    texts = ["Bla bla bla.", "God created the heavens and the earth.", "God made the heavens and the earth.",
             "God created the heaven and the earth."]
    log_probs = [-1.0, -1.5, -1.6, -1.7]  # the outlier is the single most probable candidate
    for utility in ("chrf", "bleu"):
        for sampled in (True, False):
            assert choose(texts, log_probs, sampled, utility)[0] == 1


def test_ties_go_to_the_first_candidate_and_one_candidate_is_its_own_choice():
    assert choose(["same words", "same words"], [-3.0, -1.0], True, "chrf")[0] == 0
    assert choose(["only"], [-2.0], False, "chrf") == (0, pytest.approx(100.0))
    with pytest.raises(ValueError):
        choose([], [], True, "chrf")
    with pytest.raises(ValueError):
        expected_utilities(["a"], [1.0], "ter")


def test_match_counts_are_the_clipped_matches_of_every_pair():
    from rnmt.search.mbr import _match_counts

    counts = np.random.default_rng(0).integers(0, 12, size=(7, 40)) * (np.random.default_rng(1).random((7, 40)) < .3)
    direct = np.minimum(counts[:, None, :], counts[None, :, :]).sum(-1)
    assert np.array_equal(_match_counts(counts), direct)
    assert _match_counts(np.zeros((3, 1), dtype=np.int64)).tolist() == [[0.0] * 3] * 3
