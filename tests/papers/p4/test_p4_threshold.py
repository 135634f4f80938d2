"""Threshold-Clustering (P4, Algorithm 1), its threshold rule, k-means++ and assignment."""

import math

import numpy as np
import pytest
import torch

from clusterfl.papers.p4.training.threshold import (
    ThresholdRule,
    assign,
    kmeans_pp,
    kmeans_pp_init,
    threshold_clustering,
)


def t(rows: list) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def test_two_rounds_by_hand_1d() -> None:
    # v0 = 0, tau = 1.5: round 1 keeps 0 and 1, replaces 10 by 0 -> (0 + 1 + 0) / 3 = 1/3;
    # round 2 (distances 1/3, 2/3, 29/3) keeps 0 and 1 again -> (0 + 1 + 1/3) / 3 = 4/9.
    points = t([[0.0], [1.0], [10.0]])
    one = threshold_clustering(points, t([[0.0]]), 1.5, iterations=1)
    two = threshold_clustering(points, t([[0.0]]), 1.5, iterations=2)
    assert one.item() == pytest.approx(1 / 3, abs=1e-15)
    assert two.item() == pytest.approx(4 / 9, abs=1e-15)


def test_two_centers_by_hand_2d_with_per_center_tau() -> None:
    points = t([[0, 0], [2, 0], [10, 10], [12, 10]])
    centers = t([[0, 0], [10, 10]])
    out = threshold_clustering(points, centers, t([3.0, 1.0]), iterations=1)
    # center 0 keeps (0,0), (2,0) and stands in for the far two: ((2, 0) + 0) / 4;
    # center 1's radius 1 holds only (10, 10): it stays.
    assert torch.equal(out, t([[0.5, 0.0], [10.0, 10.0]]))


def test_ball_is_closed() -> None:
    out = threshold_clustering(t([[0.0], [2.0]]), t([[0.0]]), 2.0, iterations=1)
    assert out.item() == 1.0  # the point at distance exactly tau counts


def test_infinite_tau_gives_the_mean_and_zero_tau_changes_nothing() -> None:
    points = torch.randn(7, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    centers = t([[5.0, 5.0, 5.0], [-1.0, 0.0, 2.0]])
    mean = points.mean(dim=0)
    for m in (1, 3):
        out = threshold_clustering(points, centers, math.inf, iterations=m)
        assert torch.allclose(out, mean.expand(2, 3), atol=1e-14)
    assert torch.equal(threshold_clustering(points, centers, 0.0, iterations=4), centers)


def test_rule_is_scaled_quantile_of_distances() -> None:
    points = t([[0.0], [1.0], [2.0], [3.0], [4.0]])
    radii = ThresholdRule(scale=2.0, quantile=0.25)(points, t([[0.0], [4.0]]))
    assert torch.equal(radii, t([2.0, 2.0]))  # 25% quantile of {0..4} is 1, times 2
    assert ThresholdRule.for_clusters(4).quantile == 0.25


def test_default_rule_settles_on_each_separated_cluster_mean() -> None:
    # K = 2 -> q = 1/2: from center 0 the distances are 0,1,2,10,11,12, the radius lies half
    # way between 2 and 10, so the ball holds the own cluster only and v -> its mean 1.
    points = t([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    rule = ThresholdRule.for_clusters(2)
    first = threshold_clustering(points, t([[0.0], [12.0]]), rule, iterations=1)
    assert torch.allclose(first, t([[0.5], [11.5]]), atol=1e-15)  # (0+1+2 + 3*0) / 6
    out = threshold_clustering(points, t([[0.0], [12.0]]), rule, iterations=200)
    assert torch.allclose(out, t([[1.0], [11.0]]), atol=1e-12)


def test_assign_nearest_with_ties_to_lowest_index() -> None:
    labels = assign(t([[0.0], [1.0], [4.0], [9.0]]), t([[0.0], [2.0], [9.0]]))
    assert labels.tolist() == [0, 0, 1, 2]  # 1.0 is equally far from 0 and 2


@pytest.mark.parametrize("make", [lambda: torch.Generator().manual_seed(3),
                                  lambda: np.random.default_rng(3)])
def test_kmeans_pp_seeding(make) -> None:
    points = t([[0, 0], [0, 1], [50, 50], [50, 51], [-80, 0]])
    seeds = kmeans_pp_init(points, 5, make())
    # once a point is chosen its D^2 is 0, so K = N distinct points picks every point once
    assert sorted(map(tuple, seeds.tolist())) == sorted(map(tuple, points.tolist()))
    assert torch.equal(kmeans_pp_init(points, 3, make()), kmeans_pp_init(points, 3, make()))


def test_kmeans_pp_finds_separated_clusters() -> None:
    g = torch.Generator().manual_seed(0)
    means = t([[0, 0], [100, 0], [0, 100]])
    points = means.repeat_interleave(5, 0) + torch.randn(15, 2, generator=g, dtype=torch.float64)
    centers = kmeans_pp(points, 3, g, iterations=10, restarts=5)
    labels = assign(points, centers)
    assert len(set(labels.tolist())) == 3
    assert all(len(set(labels[5 * k : 5 * k + 5].tolist())) == 1 for k in range(3))


def test_large_inputs_take_the_matrix_product_form_with_the_same_result(monkeypatch):
    """Above STEP_ELEMENTS, Eq. (1) is (inside @ points + outside count x v) / N: the same
    centers as the literal [K, N, d] form up to rounding."""
    from clusterfl.papers.p4.training import threshold

    gen = torch.Generator().manual_seed(0)
    points = torch.randn(30, 50, generator=gen, dtype=torch.float64)
    centers = points[:5] + 0.1
    radii = torch.full((5,), 9.0, dtype=torch.float64)
    literal = threshold.threshold_step(points, centers, radii)
    monkeypatch.setattr(threshold, "STEP_ELEMENTS", 0)
    product = threshold.threshold_step(points, centers, radii)
    torch.testing.assert_close(product, literal, rtol=1e-12, atol=1e-12)
    inside = (torch.cdist(centers, points) <= 9.0).sum(dim=1)
    assert int(inside.min()) > 0 and int(inside.max()) < 30  # both branches of Eq. (1) used
