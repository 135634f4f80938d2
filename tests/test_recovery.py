import numpy as np
import pytest

from clusterfl.steps.recovery import (
    adjusted_rand,
    best_matching,
    matched_accuracy,
    mixture_error,
    normalized_mutual_info,
    recovery_scores,
)


def test_relabelled_perfect_clustering_scores_one():
    true = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([2, 2, 0, 0, 1, 1])
    assert recovery_scores(true, pred) == {"ari": 1.0, "nmi": 1.0, "matched_accuracy": 1.0}
    assert best_matching(true, pred) == {2: 0, 0: 1, 1: 2}


def test_matched_accuracy_by_hand():
    true = np.array([0, 0, 0, 1, 1, 1])
    pred = np.array([1, 1, 0, 0, 0, 0])  # best: pred 1 -> 0, pred 0 -> 1: 5 of 6 right
    assert matched_accuracy(true, pred) == pytest.approx(5 / 6)
    assert matched_accuracy(true, np.zeros(6, int)) == pytest.approx(0.5)
    assert adjusted_rand(true, pred) < 1 and 0 < normalized_mutual_info(true, pred) < 1


def test_more_predicted_than_true_clusters():
    true = np.array([0, 0, 1, 1])
    pred = np.array([0, 1, 2, 2])
    assert matched_accuracy(true, pred) == pytest.approx(3 / 4)


def test_mixture_error_is_permutation_invariant_l1():
    true = np.array([[0.1, 0.9], [0.7, 0.3]])
    assert mixture_error(true, true[:, ::-1]) == 0.0
    est = np.array([[0.8, 0.2], [0.4, 0.6]])  # columns swapped, then off by 0.1 and 0.1
    assert mixture_error(true, est) == pytest.approx(0.2)
    # one estimated component: best as the second true column: (0.2 + 1.4) / 2
    assert mixture_error(true, np.array([[1.0], [1.0]])) == pytest.approx(0.8)
