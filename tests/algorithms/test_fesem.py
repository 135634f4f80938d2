"""FeSEM (Xie et al. 2021): the E-step and the k-means++ seeding by hand, one round (local
step, E-step, M-step) by hand, the seeding round, both engines, and recovery of three
label-function clusters."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms.fesem import (
    FeSem,
    FeSemHyper,
    kmeans_plusplus_rows,
    nearest_center,
)
from tests.algorithms.clustered_problem import (
    assert_models_close,
    context,
    label_function_clusters,
    sgd_step,
    stack,
    zero_start,
)

ZERO = {"1.weight": torch.zeros(3, 4), "1.bias": torch.zeros(3)}


def test_nearest_center_by_hand():
    points = torch.tensor([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0], [2.0, 2.0]])
    centers = torch.tensor([[0.0, 0.0], [4.0, 4.0]])
    # squared distances: (0, 32), (25, 1), (2, 18), (8, 8): the tie goes to center 0
    assert nearest_center(points, centers).tolist() == [0, 1, 0, 0]


def test_kmeans_plusplus_rows_picks_distinct_rows_far_apart():
    points = np.array([[0.0], [0.0], [10.0]])
    for seed in range(5):  # the duplicate row is never a second seed: D^2 is 0 there
        assert sorted(kmeans_plusplus_rows(points, 2, seed).tolist()) == [0, 2]
    assert sorted(kmeans_plusplus_rows(points, 3, seed=0).tolist()) == [0, 2]  # capped


def test_one_round_by_hand(tiny_data):
    """Centers 0 and c1 = L0 / 2 (L0: client 0's model after one step from 0), clients in
    clusters [0, 0, 1]. Each client takes one full-batch step from its center; client 0's
    model is then nearer c1 (||L0/2||^2 < ||L0||^2): E-step [1, 0, 1]; M-step: center 0 =
    client 1's model, center 1 = (5 L_0 + 3 L_2) / 8."""
    algo = FeSem(FeSemHyper(num_clusters=2), context(tiny_data, local_steps=1, batch=9,
                                                    lr=0.5))
    algo.setup()
    l0 = sgd_step(tiny_data, 0, ZERO, 0.5)
    c1 = {k: 0.5 * v for k, v in l0.items()}
    algo.cluster_models, algo.seeded = stack([ZERO, c1]), True
    algo.clusters = torch.tensor([0, 0, 1])
    algo.round(2, algo.all_clients)
    local = [l0, sgd_step(tiny_data, 1, ZERO, 0.5), sgd_step(tiny_data, 2, c1, 0.5)]

    def sq(a, b):
        return sum(float((a[k] - b[k]).pow(2).sum()) for k in a)

    by_hand = [int(sq(m, c1) < sq(m, ZERO)) for m in local]
    assert by_hand == [1, 0, 1]
    assert algo.clusters.tolist() == by_hand
    center1 = {k: (5 * local[0][k] + 3 * local[2][k]) / 8 for k in l0}
    assert_models_close(algo.cluster_models, stack([local[1], center1]))
    assert_models_close(algo.client_models(), stack([center1, local[1], center1]))


def test_first_round_seeds_the_centers_with_the_local_models(tiny_data):
    """K = 3 clients = 3 centers: every first local model becomes a center, each client
    its own cluster, and uses its own model."""
    algo = zero_start(FeSem)(FeSemHyper(num_clusters=3),
                             context(tiny_data, local_steps=1, batch=9, lr=0.5))
    algo.setup()
    algo.round(1, algo.all_clients)
    assert sorted(algo.clusters.tolist()) == [0, 1, 2]
    assert_models_close(algo.client_models(),
                        stack([sgd_step(tiny_data, c, ZERO, 0.5) for c in range(3)]))


def test_engines_agree():
    data, truth = label_function_clusters(3, 3)
    runs = [FeSem(FeSemHyper(num_clusters=3), context(data, truth, model="dnn",
                                                       engine=e)).run()
            for e in ("vectorized", "reference")]
    assert runs[0].arrays["cluster"] == runs[1].arrays["cluster"]
    assert len(set(runs[0].arrays["cluster"][-1])) == 3  # really three models to tell apart
    for a, b in zip(runs[0].records, runs[1].records, strict=True):
        assert a["test_acc"] == b["test_acc"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)


def test_recovers_three_label_function_clusters():
    data, truth = label_function_clusters(3, 4)
    history = FeSem(FeSemHyper(num_clusters=3), context(data, truth, rounds=4)).run()
    assert [r["ari"] for r in history.records] == [1.0] * 4
    labels = history.arrays["cluster"][-1]
    assert [len(set(labels[i : i + 4])) for i in (0, 4, 8)] == [1, 1, 1]
