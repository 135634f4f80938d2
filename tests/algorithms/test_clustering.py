"""Exact-number tests for the server-side clustering steps (IFCA and pFedKM)."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms.pfedkm import clustered_server_step
from clusterfl.steps.clustering import (
    align_to,
    cluster_average,
    distinct_rows,
    flatten,
    isometric_rows,
    kmeans,
    kmeans_models,
    lowest_loss_cluster,
    mean_pairwise_distance,
)


def test_lowest_loss_cluster_uses_each_clients_mean_over_its_own_samples():
    # 2 models, 2 clients; client 1 has one real sample (the padded one would flip the result)
    losses = torch.tensor([[[1.0, 3.0], [2.0, 0.0]], [[2.0, 1.0], [1.0, 0.0]]])
    mask = torch.tensor([[True, True], [True, False]])
    # client 0: means 2.0 vs 1.5 -> model 1; client 1: 2.0 vs 1.0 -> model 1
    assert lowest_loss_cluster(losses, mask).tolist() == [1, 1]
    # a tie goes to the lower index
    tie = torch.ones(2, 2, 2)
    assert lowest_loss_cluster(tie, mask).tolist() == [0, 0]


def test_cluster_average_weights_members_and_keeps_empty_clusters():
    stacked = {"w": torch.tensor([[1.0, 0.0], [3.0, 2.0], [10.0, 10.0]])}
    previous = {"w": torch.tensor([[0.0, 0.0], [-1.0, -1.0], [7.0, 7.0]])}
    labels = np.array([0, 0, 2])
    out = cluster_average(stacked, labels, torch.tensor([1.0, 3.0, 5.0]), previous)
    torch.testing.assert_close(out["w"], torch.tensor([[2.5, 1.5], [-1.0, -1.0], [10.0, 10.0]]))
    assert previous["w"][0].tolist() == [0.0, 0.0]  # the input is not modified


def test_flatten_and_pairwise_distance():
    stacked = {"b": torch.tensor([[0.0], [3.0]]), "a": torch.tensor([[0.0, 0.0], [4.0, 0.0]])}
    rows = flatten(stacked)
    assert rows.tolist() == [[0.0, 0.0, 0.0], [4.0, 0.0, 3.0]]  # "a" before "b"
    assert mean_pairwise_distance(rows) == 5.0
    assert mean_pairwise_distance(rows[:1]) == 0.0


def test_kmeans_separates_two_groups_and_caps_k_at_distinct_points():
    points = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    found = kmeans(points, 2, np.random.default_rng(0))
    assert found.labels[0] == found.labels[1] != found.labels[2] == found.labels[3]
    assert found.iterations >= 1 and found.seconds >= 0
    assert kmeans(np.zeros((3, 2)), 2, np.random.default_rng(0)).labels.tolist() == [0, 0, 0]


def test_align_to_maps_new_clusters_to_the_nearest_old_models():
    old = torch.tensor([[10.0, 10.0], [0.0, 0.0], [5.0, 5.0]])
    new = torch.tensor([[0.0, 1.0], [9.0, 9.0]])
    assert align_to(old, new).tolist() == [1, 0]


def test_pfedkm_server_step_by_hand():
    uploaded = {"w": torch.tensor([[0.0, 0.0], [0.0, 2.0], [10.0, 10.0], [12.0, 10.0]])}
    generalized = {"w": torch.tensor([[8.0, 8.0], [2.0, 2.0]])}
    new, means, labels, found = clustered_server_step(
        uploaded, generalized, torch.ones(4), beta=0.5, rng=np.random.default_rng(0))
    # uploads 0, 1 (mean [0, 1]) are nearest old model 1; uploads 2, 3 (mean [11, 10]) model 0
    assert labels.tolist() == [1, 1, 0, 0]
    torch.testing.assert_close(means["w"], torch.tensor([[11.0, 10.0], [0.0, 1.0]]))
    # Omega <- 0.5 Omega + 0.5 means
    torch.testing.assert_close(new["w"], torch.tensor([[9.5, 9.0], [1.0, 1.5]]))
    assert found.iterations >= 1


def test_distinct_rows_compares_as_np_unique_does():
    rows = torch.tensor([[1.0, 0.0], [1.0, -0.0], [2.0, 3.0], [1.0, 0.0], [2.0, 3.5]])
    assert distinct_rows(rows) == 3 == len(np.unique(rows.numpy(), axis=0))
    assert distinct_rows(rows[:1]) == 1 and distinct_rows(rows[:0]) == 0


def test_isometric_rows_keep_every_pairwise_distance_in_c_dimensions():
    points = torch.from_numpy(np.random.default_rng(0).normal(size=(7, 500))) + 40.0
    embedded = isometric_rows(points)
    assert embedded.shape == (7, 7)
    torch.testing.assert_close(torch.cdist(embedded, embedded), torch.cdist(points, points),
                               rtol=1e-10, atol=1e-9)
    few = points[:, :3]  # fewer dimensions than rows: kept as they are, centered
    torch.testing.assert_close(isometric_rows(few), few - few.mean(0))


@pytest.mark.parametrize("seed", range(12))
def test_kmeans_of_models_finds_what_kmeans_finds_on_the_raw_points(seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(4, 3000)) * rng.uniform(0.01, 1.0)
    points = 30 + centers[rng.integers(0, 4, 40)] + rng.normal(size=(40, 3000)) * rng.uniform(
        0.05, 2.0)
    points[5] = points[9]  # a duplicate: both count the same distinct rows
    raw = kmeans(points, 4, np.random.default_rng(seed))
    fast = kmeans_models(torch.from_numpy(points), 4, np.random.default_rng(seed))
    assert np.array_equal(raw.labels, fast.labels)
    assert raw.iterations == fast.iterations
