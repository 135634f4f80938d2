import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.data import Dataset
from clusterfl.data.synthetic import ClusteredSyntheticOptions, clustered_synthetic
from clusterfl.partition import build_partition, load_partition, save_partition


def _syn(seed: int) -> Dataset:
    opts = ClusteredSyntheticOptions(clients_per_cluster=4, max_size=300)
    return clustered_synthetic(opts, np.random.default_rng(seed))


def test_synthetic_is_a_pure_function_of_the_seed():
    a, b, c = _syn(1), _syn(1), _syn(2)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.x[:10], c.x[:10])


def test_synthetic_has_three_clusters_and_sizes_in_bounds():
    d = _syn(0)
    assert d.x.shape[1] == 60 and d.x.dtype == np.float32
    assert list(d.group_cluster) == [0] * 4 + [1] * 4 + [2] * 4
    sizes = np.bincount(d.groups)
    assert sizes.min() >= 50 and sizes.max() <= 300
    # B_k ~ N(offset * beta, beta): the clusters' input means sit near -1.5, 0, +1.5.
    means = [d.x[np.isin(d.groups, np.flatnonzero(d.group_cluster == g))].mean() for g in range(3)]
    assert means[0] < -0.5 < means[1] < 0.5 < means[2]


def _labels_dataset() -> Dataset:
    y = np.repeat(np.arange(10), 100)
    return Dataset("toy", np.zeros((1000, 2), np.float32), y, 10)


def test_pathological_clients_hold_c_classes_and_sizes_in_range():
    ds = _labels_dataset()
    opts = {"num_clients": 10, "classes_per_client": 3, "size_range": [30, 60],
            "test_fraction": 0.25}
    part = build_partition(ds, "pathological", opts, seed=0, key="partitions.toy")
    used = np.concatenate(part.train + part.test)
    assert len(np.unique(used)) == len(used)  # no sample given twice
    for tr, te in zip(part.train, part.test, strict=True):
        n = len(tr) + len(te)
        assert 30 <= n <= 60
        assert len(np.unique(ds.y[np.concatenate([tr, te])])) == 3
        assert len(te) == round(n * 0.25)
    # classes are dealt cyclically: every class serves 10 * 3 / 10 = 3 clients
    served = np.zeros(10, int)
    for tr, te in zip(part.train, part.test, strict=True):
        served[np.unique(ds.y[np.concatenate([tr, te])])] += 1
    assert served.tolist() == [3] * 10


def test_pathological_is_deterministic_per_seed():
    ds = _labels_dataset()
    opts = {"num_clients": 5, "classes_per_client": 2, "size_range": [20, 40]}
    a = build_partition(ds, "pathological", opts, 3, "p")
    b = build_partition(ds, "pathological", opts, 3, "p")
    c = build_partition(ds, "pathological", opts, 4, "p")
    assert all(np.array_equal(x, y) for x, y in zip(a.train, b.train, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a.train, c.train, strict=True))


def test_pathological_too_large_names_size_range():
    opts = {"num_clients": 40, "classes_per_client": 3, "size_range": [470, 4116]}
    with pytest.raises(UserError, match=r"partitions\.toy\.size_range"):
        build_partition(_labels_dataset(), "pathological", opts, 0, "partitions.toy")


def test_natural_keeps_generator_clusters_and_round_trips(tmp_path):
    d = _syn(0)
    part = build_partition(d, "natural", {"test_fraction": 0.25}, 0, "p")
    assert part.num_clients == 12
    assert np.array_equal(part.cluster, d.group_cluster)
    for k, (tr, te) in enumerate(zip(part.train, part.test, strict=True)):
        assert set(d.groups[tr]) == {k} and set(d.groups[te]) == {k}
    save_partition(part, tmp_path / "p.npz")
    back = load_partition(tmp_path / "p.npz")
    assert all(np.array_equal(x, y) for x, y in zip(back.test, part.test, strict=True))
    assert np.array_equal(back.cluster, part.cluster)
