"""Every scheme: the statistics its paper states, ground truth kept, determinism, no mutation."""

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.data import Dataset, build_dataset
from clusterfl.partition import (
    build_partition,
    client_data,
    holdout_data,
    load_partition,
    save_partition,
)
from clusterfl.partition.views import decode


def images(n_per_class=60, classes=10, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n_per_class)
    x = rng.random((len(y), 1, 6, 6)).astype(np.float32)
    split = (np.arange(len(y)) % 5 == 0).astype(np.int8)
    return Dataset("toy", x, y, classes, split=split)


def letters(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset("letters", rng.random((n, 1, 4, 4)).astype(np.float32),
                   rng.integers(0, 26, n), 26, split=(rng.random(n) < 0.2).astype(np.int8),
                   domain=np.arange(n) % 2, domain_names=("lower", "upper"))


def multimodal(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset("mm", rng.random((n, 7)).astype(np.float32), rng.integers(0, 4, n), 4,
                   modalities=("acc", "gyro"), modality_sizes=(4, 3))


CASES = {
    "dirichlet": (images, {"num_clients": 5, "alpha": 0.3}),
    "label_quantity": (images, {"num_clients": 6, "classes_per_client": 2}),
    "quantity_skew": (images, {"num_clients": 6}),
    "two_class": (lambda: images(200), {"num_clients": 10, "total_samples": 300,
                                        "sizes": "power_law"}),
    "fedsoft_mixture": (letters, {"pattern": "random", "num_clients": 10, "holdout_size": 50}),
    "rotation": (images, {"num_clients": 8, "rotations": 4}),
    "label_permutation": (images, {"num_clients": 8, "clusters": 4}),
    "modality": (multimodal, {"clients_per_modality": 3, "min_size": 5}),
    "similarity": (images, {"num_clients": 5}),
    "feature_noise": (images, {"num_clients": 4, "noise": 0.5}),
    "pathological": (images, {"num_clients": 6, "size_range": [30, 60]}),
    "iid": (images, {"num_clients": 4}),
}


@pytest.mark.parametrize("scheme", sorted(CASES))
def test_deterministic_disjoint_and_input_untouched(scheme, tmp_path):
    make, opts = CASES[scheme]
    ds = make()
    x_before, y_before = ds.x.copy(), ds.y.copy()
    a = build_partition(ds, scheme, opts, 3, "p")
    b = build_partition(ds, scheme, opts, 3, "p")
    c = build_partition(ds, scheme, opts, 4, "p")
    assert all(np.array_equal(u, v) for u, v in zip(a.train, b.train, strict=True))
    assert not all(np.array_equal(u, v) for u, v in zip(a.train, c.train, strict=True))
    np.testing.assert_array_equal(ds.x, x_before)
    np.testing.assert_array_equal(ds.y, y_before)
    used = np.concatenate([*a.train, *a.test, *a.holdout])
    samples = decode(used, len(ds.y))[1] if a.views else used
    assert len(np.unique(samples)) == len(samples)  # no sample given twice
    save_partition(a, tmp_path / "p.npz")
    back = load_partition(tmp_path / "p.npz")
    assert back.views == a.views and back.distributions == a.distributions
    assert all(np.array_equal(u, v) for u, v in zip(back.holdout, a.holdout, strict=True))
    x, y = client_data(ds, a, 0)
    assert len(x) == len(y) == len(a.train[0])


def test_fedsoft_linear_client_k_holds_half_plus_k_percent_of_a():
    ds = letters(n=40000)
    p = build_partition(ds, "fedsoft_mixture", {"pattern": "linear", "holdout_size": 200}, 0, "p")
    assert p.num_clients == 100 and p.distributions == ("lower", "upper")
    for k in range(100):
        n_k = len(p.train[k])
        assert 100 <= n_k <= 200
        share_a = np.mean(ds.domain[p.train[k]] == 0)
        assert p.mixture[k, 0] == pytest.approx((0.5 + k) / 100)
        assert abs(share_a - (0.5 + k) / 100) <= 0.5 / n_k + 1e-12
    for s in range(2):
        assert len(p.holdout[s]) == 200 and (ds.domain[p.holdout[s]] == s).all()
        assert (ds.split[p.holdout[s]] == 1).all()  # held-out sets come from the test split


@pytest.mark.parametrize("pattern,minor", [("10:90", 0.1), ("30:70", 0.3)])
def test_fedsoft_fixed_ratios(pattern, minor):
    ds = letters(n=40000)
    p = build_partition(ds, "fedsoft_mixture", {"pattern": pattern, "holdout_size": 10}, 0, "p")
    shares = np.array([np.mean(ds.domain[t] == 0) for t in p.train])
    sizes = p.train_sizes()
    assert np.all(np.abs(shares[:50] - minor) <= 0.5 / sizes[:50] + 1e-12)
    assert np.all(np.abs(shares[50:] - (1 - minor)) <= 0.5 / sizes[50:] + 1e-12)


def test_fedsoft_four_distributions_rotated_letters_and_random_mixture():
    ds = letters(n=12000)
    p = build_partition(ds, "fedsoft_mixture", {"pattern": "random", "num_clients": 20,
                        "distributions": "domain_x_rotation", "holdout_size": 30}, 0, "p")
    assert p.distributions == ("lower_rot0", "lower_rot90", "upper_rot0", "upper_rot90")
    np.testing.assert_allclose(p.mixture.sum(axis=1), 1.0)
    x, _ = holdout_data(ds, p, 1)  # lower case, rotated 90 degrees counterclockwise
    view, sample = decode(p.holdout[1], len(ds.y))
    assert (view == 1).all()
    np.testing.assert_array_equal(x, np.rot90(ds.x[sample], 1, axes=(2, 3)))
    with pytest.raises(UserError, match="exactly 2 distributions"):
        build_partition(ds, "fedsoft_mixture", {"pattern": "linear",
                        "distributions": "domain_x_rotation"}, 0, "p")


def test_random_mixture_is_uniform_cut_points():
    from clusterfl.partition.mixtures import mixture_matrix

    m = mixture_matrix("random", 20000, 2, np.random.default_rng(0))
    assert abs(m[:, 0].mean() - 0.5) < 0.01 and abs(m[:, 0].var() - 1 / 12) < 0.003


def test_fedsoft_synthetic_distributions():
    ds = build_dataset("fedsoft_regression", {"samples_per_distribution": 12000,
                                              "test_per_distribution": 500}, "d")
    p = build_partition(ds, "fedsoft_mixture", {"pattern": "10:90", "holdout_size": 500}, 0, "p")
    assert all((ds.split[h] == 1).all() for h in p.holdout)
    assert all((ds.split[t] == 0).all() for t in p.train)


def test_pathological_sizes_in_range_and_classes():
    ds = images(n_per_class=400)
    p = build_partition(ds, "pathological", {"num_clients": 10, "classes_per_client": 3,
                        "size_range": [100, 300], "test_fraction": 0.25}, 0, "p")
    for k in range(10):
        total = len(p.train[k]) + len(p.test[k])
        assert 100 <= total <= 300
        assert len(p.test[k]) == round(total * 0.25)
        assert len(np.unique(ds.y[np.concatenate([p.train[k], p.test[k]])])) == 3
    with pytest.raises(UserError, match="size_range"):
        build_partition(ds, "pathological", {"num_clients": 40, "size_range": [470, 4116]}, 0, "p")


def test_label_quantity_exactly_c_classes_and_clusters():
    ds = images()
    p = build_partition(ds, "label_quantity", {"num_clients": 10, "classes_per_client": 3}, 0, "p")
    for k in range(10):
        held = set(np.unique(ds.y[np.concatenate([p.train[k], p.test[k]])]).tolist())
        assert len(held) == 3 and k % 10 in held
    assert p.cluster is not None and len(p.cluster) == 10


def test_dirichlet_small_alpha_skews_labels_large_alpha_does_not():
    ds = images(n_per_class=200)

    def mean_classes(alpha):
        p = build_partition(ds, "dirichlet", {"num_clients": 10, "alpha": alpha, "min_size": 5},
                            0, "p")
        return np.mean([np.max(np.bincount(ds.y[t], minlength=10)) / len(t) for t in p.train])

    assert mean_classes(0.05) > 0.5 > mean_classes(100.0)


def test_two_class_balanced_and_power_law():
    ds = images(n_per_class=2000)
    bal = build_partition(ds, "two_class", {}, 0, "p")
    assert bal.num_clients == 100 and set(bal.train_sizes()) == {100}
    assert all(len(np.unique(ds.y[t])) == 2 for t in bal.train)
    ubl = build_partition(ds, "two_class", {"sizes": "power_law"}, 0, "p")
    sizes = ubl.train_sizes()
    assert sizes.sum() == 10000 and sizes.max() > 5 * np.median(sizes)


def test_quantity_skew_sizes_add_up_and_are_skewed():
    ds = images(n_per_class=500)
    p = build_partition(ds, "quantity_skew", {"num_clients": 20, "test_fraction": 0.0}, 0, "p")
    sizes = p.train_sizes()
    assert sizes.sum() == 5000 and sizes.min() >= 10 and sizes.max() > 3 * np.median(sizes)


def test_rotation_clusters_see_rotated_images():
    ds = images()
    p = build_partition(ds, "rotation", {"num_clients": 8, "rotations": 4}, 0, "p")
    assert p.cluster.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert p.views == ("rot0", "rot90", "rot180", "rot270")
    x, y = client_data(ds, p, 5)
    view, sample = decode(p.train[5], len(ds.y))
    assert (view == 2).all()
    np.testing.assert_array_equal(x, ds.x[sample][:, :, ::-1, ::-1])
    np.testing.assert_array_equal(y, ds.y[sample])


def test_rotation_total_samples_keeps_a_uniform_share():
    """total_samples = 200 of 600 images: 8 clients x 25 distinct images; by default all 600
    images are shared out; more than the dataset holds is a UserError."""
    ds = images()
    part = build_partition(ds, "rotation", {"num_clients": 8, "total_samples": 200}, 0, "p")
    full = build_partition(ds, "rotation", {"num_clients": 8}, 0, "p")
    n = len(ds.y)
    samples = [np.concatenate([decode(s.train[k], n)[1], decode(s.test[k], n)[1]])
               for s in (part, full) for k in range(8)]
    assert [len(x) for x in samples[:8]] == [25] * 8
    assert len(np.unique(np.concatenate(samples[:8]))) == 200
    assert len(np.concatenate(samples[8:])) == 600
    with pytest.raises(UserError, match="total_samples: 601 > the 600 images"):
        build_partition(ds, "rotation", {"num_clients": 8, "total_samples": 601}, 0, "p")


def test_modality_clusters_hold_one_modality_each():
    ds = multimodal()
    p = build_partition(ds, "modality", {"clients_per_modality": 3, "min_size": 5}, 0, "p")
    assert p.cluster.tolist() == [0, 0, 0, 1, 1, 1]
    x0, _ = client_data(ds, p, 0)
    x4, _ = client_data(ds, p, 4)
    assert x0.shape[1] == 4 and x4.shape[1] == 3
    sample = decode(p.train[4], len(ds.y))[1]
    np.testing.assert_array_equal(x4, ds.x[sample][:, 4:])
    with pytest.raises(UserError, match="multimodal"):
        build_partition(images(), "modality", {}, 0, "p")


def test_similarity_groups_are_kmeans_cells_with_label_mixture():
    ds = build_dataset("fedc_nmf", {"features": 30, "samples": 400, "clusters": 4,
                                    "snr_db": 10.0}, "d")
    p = build_partition(ds, "similarity", {"num_clients": 4}, 0, "p")
    assert sum(p.train_sizes()) == 400
    np.testing.assert_allclose(p.mixture.sum(axis=1), 1.0)
    assert np.mean(p.mixture.max(axis=1)) > 0.9  # at high SNR k-means finds the clusters


def test_feature_noise_grows_with_client_index():
    ds = images(n_per_class=40)
    p = build_partition(ds, "feature_noise", {"num_clients": 4, "noise": 0.6,
                        "test_fraction": 0.0}, 0, "p")
    stds = []
    for k in range(4):
        x, _ = client_data(ds, p, k)
        stds.append(np.std(x - ds.x[decode(p.train[k], len(ds.y))[1]]))
        again, _ = client_data(ds, p, k)
        np.testing.assert_array_equal(x, again)
    np.testing.assert_allclose(stds, [0.0, 0.2, 0.4, 0.6], atol=0.03)


def test_fedsoft_label_groups_make_distributions_from_classes():
    ds = images(n_per_class=400)  # 10 classes, 6x6 images, every 5th sample official test
    opts = {"pattern": "10:90", "num_clients": 10, "size_range": [40, 60], "holdout_size": 50,
            "label_groups": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]}
    p = build_partition(ds, "fedsoft_mixture", opts, 0, "p")
    assert p.distributions == ("classes_0-4", "classes_5-9")
    for k in range(10):
        share_a = np.mean(ds.y[p.train[k]] < 5)
        minor = 0.1 if k < 5 else 0.9
        assert abs(share_a - minor) <= 0.5 / len(p.train[k]) + 1e-12
    assert (ds.y[p.holdout[0]] < 5).all() and (ds.y[p.holdout[1]] >= 5).all()
    four = build_partition(ds, "fedsoft_mixture", {**opts, "pattern": "random",
                           "distributions": "domain_x_rotation",
                           "label_groups": [[0, 2], [7]]}, 0, "p")
    assert four.distributions == ("classes_0,2_rot0", "classes_0,2_rot90", "classes_7_rot0",
                                  "classes_7_rot90")
    used = np.concatenate([decode(t, len(ds.y))[1] for t in four.train])
    assert set(ds.y[used]) <= {0, 2, 7}  # classes in no group are not used
    for bad, match in (([[0, 1], [1, 2]], "disjoint"), ([[0], []], "non-empty")):
        with pytest.raises(UserError, match=match):
            build_partition(ds, "fedsoft_mixture", {**opts, "label_groups": bad}, 0, "p")
    with pytest.raises(UserError, match="label_groups: needs distributions"):
        build_partition(ds, "fedsoft_mixture", {**opts, "distributions": "rotation"}, 0, "p")
