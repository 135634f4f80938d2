"""FedGroup (Duan et al. 2021): EDC's decomposed cosines and the newcomer rule by hand, the
cold start and the first round by hand, a newcomer's group, both engines, and recovery of
three label-function clusters."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms.fedgroup import (
    FedGroup,
    FedGroupHyper,
    decomposed_cosine,
    group_means,
    most_similar_group,
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


def test_decomposed_cosine_on_axis_updates():
    """Rows 2e1, e2, -e1, 0: the right singular vectors are e1 (sigma^2 = 5) and e2 (1)."""
    u = torch.tensor([[2.0, 0, 0], [0, 1, 0], [-1, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(decomposed_cosine(u, 2), [[1, 0], [0, 1], [-1, 0], [0, 0]])
    # signs: the projections on e1 sum to -2 + 1 < 0, so the direction is -e1
    flipped = decomposed_cosine(torch.tensor([[-2.0, 0, 0], [0, 1, 0], [1, 0, 0]]), 1)
    np.testing.assert_array_equal(flipped, [[1], [0], [-1]])
    assert decomposed_cosine(u, 5).shape == (4, 3)  # m capped at the rank bound


def test_decomposed_cosine_by_hand():
    """Rows (3, 1), (1, 2): A^T A = [[10, 5], [5, 5]], whose top eigenvector is
    (1, 1/phi) normalised (phi the golden ratio)."""
    phi = (1 + 5**0.5) / 2
    v = np.array([1.0, 1 / phi]) / np.hypot(1.0, 1 / phi)
    expected = [[(3 * v[0] + v[1]) / 10**0.5], [(v[0] + 2 * v[1]) / 5**0.5]]
    features = decomposed_cosine(torch.tensor([[3.0, 1.0], [1.0, 2.0]]), 1)
    np.testing.assert_allclose(features, expected, rtol=1e-12)


def test_newcomers_join_the_group_with_the_most_similar_update():
    groups = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    u = torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0], [-1.0, -1.0], [-1.0, 2.0]])
    # cosines: (1, 0), (0, 1), (0, 0), (-.71, -.71), (-.45, .89): ties go to group 0
    assert most_similar_group(u, groups).tolist() == [0, 1, 0, 0, 1]
    # a group with a zero update is similar to nothing (0), still above a negative cosine
    zero_group = torch.tensor([[0.0, 0.0], [-1.0, 0.0]])
    assert most_similar_group(torch.tensor([[1.0, 0.0]]), zero_group).tolist() == [0]
    means = group_means(u[:3], np.array([1, 1, 0]), 3)
    torch.testing.assert_close(means, torch.tensor([[0.0, 0.0], [0.5, 1.0], [0.0, 0.0]]))


def _algo(data, **hyper):
    ctx = context(data, local_steps=1, batch=9, lr=0.5)
    return zero_start(FedGroup)(FedGroupHyper(**hyper), ctx)


def test_cold_start_and_first_round_by_hand(tiny_data):
    """3 clients, K = 2, one full-batch pretraining step from 0: the pretrained models P_c
    are the updates; the two clients whose decomposed cosines are closest share a group
    (the 2-means optimum of 3 points), each group starts at its members' unweighted mean
    P, and the round is FedAvg within each group (one full-batch step, sample-weighted)."""
    algo = _algo(tiny_data, num_clusters=2, pretrain_steps=1)
    algo.setup()
    algo.round(1, algo.all_clients)
    pre = [sgd_step(tiny_data, c, ZERO, 0.5) for c in range(3)]
    rows = np.stack([np.concatenate([p["1.bias"].numpy(), p["1.weight"].numpy().ravel()])
                     for p in pre]).astype(np.float64)
    _, _, vt = np.linalg.svd(rows, full_matrices=False)
    x = rows @ vt[:2].T / np.linalg.norm(rows, axis=1, keepdims=True)
    pairs = [(0, 1), (0, 2), (1, 2)]
    a, b = min(pairs, key=lambda p: np.linalg.norm(x[p[0]] - x[p[1]]))
    (alone,) = {0, 1, 2} - {a, b}
    labels = algo.clusters.tolist()
    assert labels[a] == labels[b] != labels[alone]
    start = {k: (pre[a][k] + pre[b][k]) / 2 for k in ZERO}  # the pair's group, unweighted
    local = {a: sgd_step(tiny_data, a, start, 0.5), b: sgd_step(tiny_data, b, start, 0.5),
             alone: sgd_step(tiny_data, alone, pre[alone], 0.5)}
    n = [5, 9, 3]
    pair = {k: (n[a] * local[a][k] + n[b] * local[b][k]) / (n[a] + n[b]) for k in ZERO}
    by_label = {labels[a]: pair, labels[alone]: local[alone]}
    assert_models_close(algo.cluster_models, stack([by_label[0], by_label[1]]))


def test_a_newcomer_joins_by_its_pretrained_update(tiny_data):
    """alpha = 1, K = 2: two sampled clients, one group each (their pretrained models); the
    third is a newcomer and joins the group whose update is the most similar to its own."""
    algo = _algo(tiny_data, num_clusters=2, alpha=1, pretrain_steps=1)
    algo.setup()
    algo.cold_start()
    pre = [sgd_step(tiny_data, c, ZERO, 0.5) for c in range(3)]
    flat = [torch.cat([p["1.bias"], p["1.weight"].ravel()]).double() for p in pre]
    member = {}  # group -> its one sampled client, found by the group's model
    for g in range(2):
        model = torch.cat([algo.cluster_models["1.bias"][g],
                           algo.cluster_models["1.weight"][g].ravel()]).double()
        member[g] = min(range(3), key=lambda c: float((flat[c] - model).norm()))
    (newcomer,) = {0, 1, 2} - set(member.values())
    cos = [float(flat[newcomer] @ flat[member[g]] / (flat[newcomer].norm()
                                                    * flat[member[g]].norm())) for g in (0, 1)]
    assert algo.clusters[newcomer] == int(np.argmax(cos))
    assert [algo.clusters[member[g]] for g in (0, 1)] == [0, 1]


def test_engines_agree():
    data, truth = label_function_clusters(3, 3)
    runs = [FedGroup(FedGroupHyper(num_clusters=3, pretrain_steps=5),
                     context(data, truth, model="dnn", engine=e)).run()
            for e in ("vectorized", "reference")]
    assert runs[0].arrays["cluster"] == runs[1].arrays["cluster"]
    assert len(set(runs[0].arrays["cluster"][-1])) == 3  # really three models to tell apart
    for a, b in zip(runs[0].records, runs[1].records, strict=True):
        assert a["test_acc"] == b["test_acc"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)


def test_recovers_three_label_function_clusters():
    data, truth = label_function_clusters(3, 4)
    hyper = FedGroupHyper(num_clusters=3, pretrain_steps=10)
    history = FedGroup(hyper, context(data, truth, rounds=4)).run()
    assert [r["ari"] for r in history.records] == [1.0] * 4
