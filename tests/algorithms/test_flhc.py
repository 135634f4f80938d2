"""FL+HC (Briggs et al. 2020): the hierarchical clustering of updates with exact merge
heights, FL+HC before its clustering round == FedAvg bit for bit, the clustering round by
hand, every client clustered under partial participation, both engines, and recovery of
three label-function clusters."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms import ALGORITHMS
from clusterfl.algorithms.fedavg import FedAvgHyper
from clusterfl.algorithms.flhc import FlHc, FlHcHyper, hierarchical_clusters
from tests.algorithms.clustered_problem import (
    assert_models_close,
    context,
    label_function_clusters,
    sgd_step,
    stack,
    zero_start,
)

ZERO = {"1.weight": torch.zeros(3, 4), "1.bias": torch.zeros(3)}
# Ward on 0, 1, 10, 11.5: {0, 1} merges at 1, {10, 11.5} at 1.5, and the two pairs at
# sqrt(2 * 2 * 2 / 4) * |0.5 - 10.75| = sqrt(2) * 10.25 = 14.496
LINE = np.array([[0.0], [1.0], [10.0], [11.5]])


@pytest.mark.parametrize(("threshold", "labels"), [
    (1.0, [0, 1, 2, 3]),  # merges only below the threshold: 1 is not below 1
    (1.2, [0, 0, 1, 2]),
    (1.5, [0, 0, 1, 2]),
    (1.6, [0, 0, 1, 1]),
    (14.49, [0, 0, 1, 1]),
    (14.5, [0, 0, 0, 0]),
])
def test_ward_cut_by_hand(threshold, labels):
    assert hierarchical_clusters(LINE, threshold).tolist() == labels


def test_labels_follow_the_first_row_and_other_linkages():
    assert hierarchical_clusters(LINE[[2, 0, 3, 1]], 5.0).tolist() == [0, 1, 0, 1]
    assert hierarchical_clusters(LINE[:1], 1.0).tolist() == [0]
    # Manhattan distances 2 (rows 0, 1), 3, 3; complete linkage joins row 2 at 3
    square = np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.0]])
    assert hierarchical_clusters(square, 2.5, "complete", "manhattan").tolist() == [0, 0, 1]
    assert hierarchical_clusters(square, 3.5, "complete", "manhattan").tolist() == [0, 0, 0]
    # cosine distance 1 - cos: rows 0 and 1 point almost the same way, row 2 at 90 degrees
    arrows = np.array([[1.0, 0.0], [2.0, 0.1], [0.0, 1.0]])
    assert hierarchical_clusters(arrows, 0.5, "average", "cosine").tolist() == [0, 0, 1]


def test_before_clustering_it_is_fedavg_bit_for_bit(tiny_data):
    flhc = FlHc(FlHcHyper(rounds_before_clustering=3), context(tiny_data, model="dnn")).run()
    fedavg = ALGORITHMS.get("fedavg")(FedAvgHyper(), context(tiny_data, model="dnn")).run()
    assert flhc.records == [r | {"flhc_clusters": 1.0} for r in fedavg.records]


def test_clustering_round_by_hand(tiny_data):
    """n = 0: every client takes one full-batch step from w = 0, so its model is its update;
    the threshold lies between the closest pair's distance and Ward's height joining the
    third client, so that pair shares a cluster; each cluster's model is the sample-weighted
    mean of its members' models (FedAvg from w)."""
    local = [sgd_step(tiny_data, c, ZERO, 0.5) for c in range(3)]
    u = [torch.cat([m["1.bias"], m["1.weight"].ravel()]).double() for m in local]
    pairs = [(0, 1), (0, 2), (1, 2)]
    a, b = min(pairs, key=lambda p: float((u[p[0]] - u[p[1]]).norm()))
    (alone,) = {0, 1, 2} - {a, b}
    closest = float((u[a] - u[b]).norm())
    join = (2 * 2 * 1 / 3) ** 0.5 * float(((u[a] + u[b]) / 2 - u[alone]).norm())
    assert closest < join
    hyper = FlHcHyper(rounds_before_clustering=0, distance_threshold=(closest + join) / 2)
    algo = zero_start(FlHc)(hyper, context(tiny_data, local_steps=1, batch=9, lr=0.5))
    algo.setup()
    algo.round(1, algo.all_clients)
    labels = algo.clusters.tolist()
    assert labels[a] == labels[b] != labels[alone] and labels[0] == 0
    n = [5, 9, 3]
    pair = {k: (n[a] * local[a][k] + n[b] * local[b][k]) / (n[a] + n[b]) for k in ZERO}
    by_label = {labels[a]: pair, labels[alone]: local[alone]}
    assert_models_close(algo.cluster_models, stack([by_label[0], by_label[1]]))
    assert algo.round_metrics() == {"flhc_clusters": 2.0}


def test_every_client_trains_in_the_clustering_round(tiny_data):
    """Two of three clients are selected per round, yet the clustering round clusters all
    three (a tiny threshold: every client its own cluster)."""
    ctx = context(tiny_data, rounds=2)
    ctx.clients_per_round = 2
    history = FlHc(FlHcHyper(rounds_before_clustering=1, distance_threshold=1e-9), ctx).run()
    assert [r["flhc_clusters"] for r in history.records] == [1.0, 3.0]
    assert history.arrays["cluster"][-1] == [0, 1, 2]


def test_engines_agree():
    data, truth = label_function_clusters(3, 3)
    hyper = FlHcHyper(rounds_before_clustering=1, distance_threshold=0.3)
    runs = [FlHc(hyper, context(data, truth, model="dnn", engine=e)).run()
            for e in ("vectorized", "reference")]
    assert runs[0].arrays["cluster"] == runs[1].arrays["cluster"]
    assert runs[0].records[-1]["flhc_clusters"] == 3  # Ward merges 0.12 .. 0.20 | 0.38, 0.49
    for a, b in zip(runs[0].records, runs[1].records, strict=True):
        assert a["test_acc"] == b["test_acc"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)


def test_recovers_three_label_function_clusters():
    """One FedAvg round, then the clustering round: the updates' Ward merges within a
    concept stay below 0.32, those across concepts are above 0.9."""
    data, truth = label_function_clusters(3, 4)
    hyper = FlHcHyper(rounds_before_clustering=1, distance_threshold=0.5)
    history = FlHc(hyper, context(data, truth, rounds=4)).run()
    assert [r["ari"] for r in history.records] == [0.0, 1.0, 1.0, 1.0]
    assert [r["flhc_clusters"] for r in history.records] == [1.0, 3.0, 3.0, 3.0]
