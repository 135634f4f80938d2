"""`fashion_mnist`'s `subset` option: a uniform subset drawn with the dataset's seed."""

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options
from clusterfl.data import Dataset
from clusterfl.data.real import FashionMnistOptions, subsample


def test_subsample_keeps_drawn_rows_in_order_with_their_labels_and_split():
    x = np.arange(10, dtype=np.float32).reshape(10, 1, 1, 1)
    data = Dataset("d", x, np.arange(10) % 3, 3, split=(np.arange(10) >= 8).astype(np.int8))
    out = subsample(data, 4, np.random.default_rng(0), "datasets.d.subset")
    keep = np.sort(np.random.default_rng(0).choice(10, 4, replace=False))
    np.testing.assert_array_equal(out.x[:, 0, 0, 0], keep)
    np.testing.assert_array_equal(out.y, keep % 3)
    np.testing.assert_array_equal(out.split, (keep >= 8).astype(np.int8))
    assert out.info["subset"] == "4 of 10"
    with pytest.raises(UserError, match=r"datasets\.d\.subset: 11 exceeds the 10 samples"):
        subsample(data, 11, np.random.default_rng(0), "datasets.d.subset")


def test_subset_option_is_validated():
    assert build_options(FashionMnistOptions, {"subset": 6000}, "k").subset == 6000
    with pytest.raises(UserError, match=r"k\.subset"):
        build_options(FashionMnistOptions, {"subset": 0}, "k")
