"""CFL (Sattler et al. 2020): its pure steps by hand (cosine similarities, the optimal
bipartition, the split criterion), a split by hand inside the algorithm, CFL before its
first split == FedAvg, and recovery of two label-function clusters."""

import itertools

import numpy as np
import pytest
import torch

from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
from clusterfl.algorithms.cfl import (
    Cfl,
    CflHyper,
    bipartition,
    cross_similarity,
    pairwise_cosine,
    separable,
    should_split,
    update_norms,
)
from clusterfl.algorithms.fedavg import FedAvgHyper
from clusterfl.engine import ENGINES, ClientData
from clusterfl.training.models import build_model

# A chain of similarities 0 -0.9- 1 -0.85- 2 -0.8- 3 -0.6- 4, every other pair lower and
# distinct: the bipartition with the smallest largest cross similarity cuts the 0.6 link.
CHAIN = np.array([
    [1.0, 0.9, 0.0, -0.2, -0.4],
    [0.9, 1.0, 0.85, -0.1, -0.3],
    [0.0, 0.85, 1.0, 0.8, 0.1],
    [-0.2, -0.1, 0.8, 1.0, 0.6],
    [-0.4, -0.3, 0.1, 0.6, 1.0],
])


def test_pairwise_cosine_by_hand():
    u = torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0], [-4.0, 3.0], [0.0, 0.0]])
    alpha = pairwise_cosine(u)
    expected = np.array([
        [1.0, 0.6, 0.8, 0.0, 0.0],
        [0.6, 1.0, 0.0, -0.8, 0.0],
        [0.8, 0.0, 1.0, 0.6, 0.0],
        [0.0, -0.8, 0.6, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0],  # a zero update is similar to nothing
    ])
    np.testing.assert_array_equal(alpha, expected)


def test_single_linkage_is_the_optimal_bipartition_and_complete_is_not():
    c1, c2 = bipartition(CHAIN, "single")
    assert (c1.tolist(), c2.tolist()) == ([0, 1, 2, 3], [4])
    assert cross_similarity(CHAIN, c1, c2) == 0.6
    best = min(cross_similarity(CHAIN, np.array(a), np.array(sorted(set(range(5)) - set(a))))
               for r in range(1, 5) for a in itertools.combinations(range(5), r))
    assert best == 0.6  # brute force over all 30 bipartitions
    c1, c2 = bipartition(CHAIN, "complete")  # the official code's linkage
    assert (c1.tolist(), c2.tolist()) == ([0, 1], [2, 3, 4])
    assert cross_similarity(CHAIN, c1, c2) == 0.85


def test_bipartition_of_two_opposite_groups_of_updates():
    u = torch.tensor([[1.0, 0.1], [-1.0, 0.0], [1.0, -0.1], [-1.0, 0.2], [0.9, 0.0]])
    c1, c2 = bipartition(pairwise_cosine(u))
    assert (c1.tolist(), c2.tolist()) == ([0, 2, 4], [1, 3])


def test_split_criterion_by_hand():
    mean_norm, max_norm = update_norms(torch.tensor([[3.0, 4.0], [0.0, 0.0]]),
                                       torch.tensor([1.0, 3.0]))
    assert (mean_norm, max_norm) == (1.25, 5.0)  # ||(0.75, 1.0)||, ||(3, 4)||
    assert should_split(0.3, 2.0, eps1=0.4, eps2=1.6)
    assert not should_split(0.5, 2.0, eps1=0.4, eps2=1.6)  # not near a stationary point
    assert not should_split(0.3, 1.0, eps1=0.4, eps2=1.6)  # every client near its own
    assert separable(0.6, 0.4)  # 0.4 < sqrt(0.2) = 0.447...
    assert not separable(0.6, 0.45)
    assert not separable(1.0, 0.0)  # identical directions never split
    assert separable(0.6, 0.0)


def _ctx(data, truth=None, rounds=3, lr=0.05, local_steps=3, batch=4):
    model = build_model("mlr", tuple(data.train_x.shape[2:]), int(data.train_y.max()) + 1)
    sched = Schedule(lr=lr, rounds=rounds, local_steps=local_steps, batch_size=batch)
    return NeuralContext.build(model, ENGINES["vectorized"](model, data), sched, seed=0,
                               true_cluster=truth)


def test_split_by_hand_inside_the_algorithm(tiny_data):
    """Three clients; the third's update opposes the first two's: the cluster splits into
    {0, 1} and {2}, the new cluster's model a copy of the parent's; a cluster with a client
    that did not take part is not checked."""
    algo = Cfl(CflHyper(eps1=0.5, eps2=1.0, warmup_rounds=0), _ctx(tiny_data))
    algo.setup()
    updates = torch.tensor([[1.0, 0.0], [1.0, 0.125], [-1.5, 0.0]])  # mean (1/6, 1/24)
    sizes = torch.tensor([1.0, 1.0, 1.0])
    algo.split_clusters(torch.tensor([0, 2]), updates[[0, 2]], sizes[:2])
    assert algo.clusters.tolist() == [0, 0, 0] and algo.num_cluster_models() == 1
    algo.split_clusters(torch.arange(3), updates, sizes)
    assert algo.clusters.tolist() == [0, 0, 1] and algo.num_cluster_models() == 2
    assert algo.norms == [pytest.approx([np.hypot(0.5 / 3, 0.125 / 3), 1.5], rel=1e-12)]
    for v in algo.cluster_models.values():
        assert torch.equal(v[0], v[1])
    algo.split_clusters(torch.arange(3), updates, sizes)  # {0, 1} is below min_split_size
    assert algo.num_cluster_models() == 2
    blocked = Cfl(CflHyper(eps1=0.5, eps2=1.0, warmup_rounds=0, gamma_max=0.999),
                  _ctx(tiny_data))
    blocked.setup()
    blocked.split_clusters(torch.arange(3), updates, sizes)
    # the gamma check: 0.999 >= sqrt((1 + 0.9923) / 2) = 0.9981
    assert blocked.num_cluster_models() == 1


def test_cfl_before_its_first_split_is_fedavg(tiny_data):
    cfl = Cfl(CflHyper(warmup_rounds=3), _ctx(tiny_data)).run()
    fedavg = ALGORITHMS.get("fedavg")(FedAvgHyper(), _ctx(tiny_data)).run()
    assert cfl.records == [r | {"cfl_clusters": 1.0} for r in fedavg.records]


def test_cfl_recovers_two_label_function_clusters():
    """Two concepts (labels of one linear rule, shifted by 2 in the second): after two
    FedAvg-like rounds the root splits along the concepts and stays split."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(10, 4))
    truth = np.repeat([0, 1], 6)

    def part(c: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(n, 10)).astype(np.float32)
        return x, (np.argmax(x @ w, 1) + 2 * c) % 4

    data = ClientData.from_lists([part(c, 60) for c in truth], [part(c, 20) for c in truth])
    hyper = CflHyper(eps1=10.0, eps2=0.0, warmup_rounds=2, min_split_size=7)
    history = Cfl(hyper, _ctx(data, truth, rounds=5, local_steps=10, batch=20)).run()
    assert [r["cfl_clusters"] for r in history.records] == [1, 1, 2, 2, 2]
    assert [r["ari"] for r in history.records][2:] == [1.0, 1.0, 1.0]
    assert history.arrays["cluster"][-1] == [0] * 6 + [1] * 6
    assert history.arrays["cfl_norms"][:2] == [[], []]  # warm-up: nothing checked
