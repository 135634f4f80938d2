"""The `label_permutation` scheme: clusters of clients whose labels are permuted (concept
shift), with the ground truth kept like `rotation`'s."""

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.partition import build_partition, client_data, load_partition, save_partition
from clusterfl.partition.report import summarize_partition
from clusterfl.partition.views import decode, label_map
from tests.partition.test_all_schemes import images


def test_each_cluster_sees_true_images_with_its_own_label_permutation(tmp_path):
    ds = images()
    p = build_partition(ds, "label_permutation", {"num_clients": 8, "clusters": 4}, 0, "p")
    assert p.cluster.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert p.views[0] == "labels:0,1,2,3,4,5,6,7,8,9"  # identity_first
    perms = [label_map(v) for v in p.views]
    assert len({tuple(q) for q in perms}) == 4
    assert all(sorted(q) == list(range(10)) for q in perms)
    for k in range(8):
        view, sample = decode(p.train[k], len(ds.y))
        assert (view == p.cluster[k]).all()
        x, y = client_data(ds, p, k)
        np.testing.assert_array_equal(x, ds.x[sample])
        np.testing.assert_array_equal(y, perms[p.cluster[k]][ds.y[sample]])
    used = np.concatenate([*p.train, *p.test])
    assert len(np.unique(decode(used, len(ds.y))[1])) == len(used) == len(ds.y)
    save_partition(p, tmp_path / "p.npz")
    back = load_partition(tmp_path / "p.npz")
    assert back.views == p.views and back.cluster.tolist() == p.cluster.tolist()
    np.testing.assert_array_equal(client_data(ds, back, 7)[1], client_data(ds, p, 7)[1])
    # the partition table shows the labels the clients see
    table = summarize_partition(p, ds)
    assert table["classes"].tolist()[0] == " ".join(map(str, range(10)))


def test_permutation_of_a_given_sample_by_hand():
    """A dataset of 4 samples, classes 0..2: cluster 1's view maps y -> p[y]."""
    from clusterfl.data import Dataset
    from clusterfl.partition.views import view_labels

    ds = Dataset("t", np.zeros((4, 1, 2, 2), np.float32), np.array([0, 1, 2, 1]), 3)
    views = ("labels:0,1,2", "labels:2,0,1")
    # sample 1 and 2 through view 1, sample 3 through view 0
    assert view_labels(ds, views, np.array([4 + 1, 4 + 2, 3])).tolist() == [0, 1, 1]


def test_options_and_errors():
    ds = images(n_per_class=10, classes=3)
    p = build_partition(ds, "label_permutation", {"num_clients": 6, "clusters": 6,
                                                  "identity_first": False,
                                                  "total_samples": 24}, 1, "p")
    assert len(set(p.views)) == 6 and sum(map(len, [*p.train, *p.test])) == 24
    with pytest.raises(UserError, match=r"p\.clusters: 7 distinct permutations of 3 classes"):
        build_partition(ds, "label_permutation", {"num_clients": 7, "clusters": 7}, 0, "p")
    with pytest.raises(UserError, match=r"p\.num_clients"):
        build_partition(ds, "label_permutation", {"num_clients": 2, "clusters": 3}, 0, "p")
