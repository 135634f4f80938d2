"""Each synthetic generator matches the statistics its paper states; seeds fix the output."""

import numpy as np
import pytest

from clusterfl.data import build_dataset

SMALL = {
    "synthetic": {"num_clients": 5},
    "clustered_synthetic": {"clients_per_cluster": 2},
    "fedsoft_regression": {"samples_per_distribution": 500, "test_per_distribution": 100},
    "threshold_regression": {},
    "fedc_nmf": {"features": 40, "samples": 200, "clusters": 5},
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_same_seed_same_data_other_seed_differs(name):
    a = build_dataset(name, {**SMALL[name], "seed": 1}, "d")
    b = build_dataset(name, {**SMALL[name], "seed": 1}, "d")
    c = build_dataset(name, {**SMALL[name], "seed": 2}, "d")
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.x.shape != c.x.shape or not np.array_equal(a.x, c.x)


def test_fedc_snr_within_a_tenth_of_a_db():
    for target in (-3.0, 5.0):
        ds = build_dataset("fedc_nmf", {"features": 60, "samples": 500, "clusters": 6,
                                        "snr_db": target}, "d")
        signal = ds.extras["W"][:, ds.y].T
        snr = 10 * np.log10(np.sum(signal**2) / np.sum((ds.x - signal) ** 2))
        assert abs(snr - target) < 0.1
        assert (ds.extras["W"] >= 0).all() and set(np.unique(ds.y)) <= set(range(6))


def test_threshold_regression_optima_and_exact_labels():
    ds = build_dataset("threshold_regression", {}, "d")
    optima = ds.extras["optima"]
    assert optima.shape == (4, 10) and set(np.unique(optima)) <= {0.0, 100.0}
    assert len(ds.group_cluster) == 36 and np.bincount(ds.group_cluster).tolist() == [9] * 4
    assert np.bincount(ds.groups).tolist() == [9] * 36
    for client in (0, 17, 35):
        rows = ds.groups == client
        np.testing.assert_allclose(
            ds.y[rows], ds.x[rows].astype(float) @ optima[ds.group_cluster[client]], rtol=1e-5,
            atol=1e-3)


def test_fedsoft_regression_recovers_theta_and_noise_level():
    ds = build_dataset("fedsoft_regression", {"samples_per_distribution": 4000,
                                              "test_per_distribution": 500}, "d")
    theta = ds.extras["theta"]
    assert theta.shape == (2, 10) and ds.is_regression
    for s in range(2):
        rows = ds.domain == s
        fit, *_ = np.linalg.lstsq(ds.x[rows].astype(float), ds.y[rows], rcond=None)
        np.testing.assert_allclose(fit, theta[s], atol=0.1)
        assert abs(np.std(ds.y[rows] - ds.x[rows] @ theta[s]) - 1.0) < 0.05
        assert (ds.split[rows] == 1).sum() == 500
    big = build_dataset("fedsoft_regression", {"num_distributions": 400,
                                               "samples_per_distribution": 2,
                                               "test_per_distribution": 0}, "d")
    assert abs(np.std(big.extras["theta"]) - 10.0) < 0.5  # sigma0 = 10


def test_plain_synthetic_has_no_clusters_and_fedprox_sizes():
    ds = build_dataset("synthetic", {"num_clients": 30}, "d")
    assert ds.group_cluster is None and ds.x.shape[1] == 60
    sizes = np.bincount(ds.groups)
    assert len(sizes) == 30 and sizes.min() >= 50 and sizes.max() <= 3000
