"""P1's synthetic data with the official pFedMe generator switch and the readings of mu_k."""

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.data import build_dataset

PFEDME = {"generator": "pfedme", "max_size": None}


def test_pfedme_generator_exact_sample_counts_and_shapes_seed0():
    ds = build_dataset("clustered_synthetic", PFEDME, "datasets.d")
    sizes = np.bincount(ds.groups)
    assert ds.x.shape == (92100, 60) and ds.y.shape == (92100,)
    assert sizes[:6].tolist() == [600, 455, 1230, 585, 340, 810]
    assert len(sizes) == 60 and sizes.min() >= 250 and (sizes % 5 == 0).all()
    # the capped generator draws the same lognormals first: 5 times fewer samples here
    capped = build_dataset("clustered_synthetic", {}, "datasets.d")
    assert (np.bincount(capped.groups) * 5 == sizes).all() and capped.x.shape == (18420, 60)


def test_pfedme_generator_follows_the_documented_formula_on_a_tiny_draw():
    opts = {**PFEDME, "clients_per_cluster": 1, "dimension": 3, "num_classes": 2,
            "alpha": 0.5, "beta": 0.25, "seed": 7}
    ds = build_dataset("clustered_synthetic", opts, "datasets.d")
    rng = np.random.default_rng(7)  # the same stream, drawn as the docstring says
    sizes = (rng.lognormal(4, 2, 3).astype(int) + 50) * 5
    rng.normal(0.0, 0.5, 3)  # FedProx's u_k prior, replaced by "constant" = alpha / beta = 2
    b = rng.normal(np.array([-3.0, 0.0, 3.0]) * 0.25, 0.25)
    v = rng.normal(b[:, None], 1.0, (3, 3))
    sd = np.sqrt(np.arange(1, 4) ** -1.2)
    assert np.bincount(ds.groups).tolist() == sizes.tolist()
    np.testing.assert_array_equal(ds.extras["B"], b)
    np.testing.assert_array_equal(ds.extras["model_mean"], [2.0, 2.0, 2.0])
    start = 0
    for k in range(3):
        w, bias = rng.normal(2.0, 1.0, (3, 2)), rng.normal(2.0, 1.0, 2)
        x = v[k] + rng.standard_normal((sizes[k], 3)) * sd
        rows = slice(start, start + sizes[k])
        np.testing.assert_allclose(ds.x[rows], x, rtol=1e-6)
        np.testing.assert_array_equal(ds.y[rows], np.argmax(x @ w + bias, axis=1))
        start += sizes[k]


@pytest.mark.parametrize("generator", ["capped", "pfedme"])
def test_no_reading_of_mu_k_changes_a_label(generator):
    """u_k shifts every logit of a sample equally; with the pFedMe draw order even FedProx's
    random u_k consumes the same numbers, so all three readings give the same data."""
    base = {"generator": generator, "clients_per_cluster": 3, "seed": 3}
    runs = {m: build_dataset("clustered_synthetic", {**base, "model_mean": m}, "d")
            for m in ("constant", "input_scaled", "fedprox")}
    same = ["constant", "input_scaled"] + (["fedprox"] if generator == "pfedme" else [])
    for m in same[1:]:
        np.testing.assert_array_equal(runs[m].x, runs["constant"].x)
        np.testing.assert_array_equal(runs[m].y, runs["constant"].y)
    np.testing.assert_allclose(runs["input_scaled"].extras["model_mean"],
                               runs["input_scaled"].extras["B"])  # alpha / beta = 1
    assert not np.array_equal(runs["fedprox"].extras["model_mean"],
                              runs["constant"].extras["model_mean"])


def test_unknown_generator_or_reading_is_one_line():
    with pytest.raises(UserError, match=r"^datasets\.d\.generator: 'official' is not allowed; "
                                        r"allowed: capped, pfedme$"):
        build_dataset("clustered_synthetic", {"generator": "official"}, "datasets.d")
    with pytest.raises(UserError, match=r"^datasets\.d\.model_mean: .*constant, input_scaled"):
        build_dataset("clustered_synthetic", {"model_mean": "prior"}, "datasets.d")
