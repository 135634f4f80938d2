"""The validation split of the clients' training data: exact sizes, disjoint, nothing of
the test split left, the same for the same seed."""

from pathlib import Path

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.partition import Partition
from clusterfl.partition.validation import validation_split
from clusterfl.run.config import SuiteConfig


def _partition() -> Partition:
    return Partition(train=(np.arange(10), np.arange(10, 13), np.arange(13, 15)),
                     test=(np.arange(100, 104), np.arange(104, 106), np.arange(106, 107)),
                     cluster=np.array([0, 1, 1]))


def test_a_share_of_each_clients_training_data_becomes_its_test_split():
    split = validation_split(_partition(), 0.2, seed=3)
    # ceil(0.2 * 10) = 2, ceil(0.2 * 3) = 1, and at least 1 left to train on of 2
    assert [len(v) for v in split.test] == [2, 1, 1]
    assert [len(t) for t in split.train] == [8, 2, 1]
    for before, train, valid in zip(_partition().train, split.train, split.test, strict=True):
        assert not set(train) & set(valid)
        assert sorted([*train, *valid]) == list(before)
    assert max(int(v.max()) for v in split.test) < 100  # no test sample left
    assert split.cluster.tolist() == [0, 1, 1]
    again = validation_split(_partition(), 0.2, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(split.test, again.test, strict=True))
    other = validation_split(_partition(), 0.2, seed=4)
    assert not np.array_equal(split.test[0], other.test[0])


def test_a_bad_fraction_is_refused():
    with pytest.raises(ValueError):
        validation_split(_partition(), 1.0, seed=0)


def test_validation_fraction_in_params_is_checked_in_one_line():
    papers = {"p1": {"experiments": {"e": {"partition": "p", "validation_fraction": 1.5}}}}
    raw = {"suite": {"name": "t", "seeds": [0], "grid": []},
           "datasets": {"d": {"source": "mnist_subset"}},
           "partitions": {"p": {"dataset": "d", "scheme": "iid", "num_clients": 2}}}
    with pytest.raises(UserError) as err:
        SuiteConfig(Path("params.yaml"), raw, paper_params=papers, load=["p1"])
    assert "experiments.e.validation_fraction: expected a number in (0, 1)" in str(err.value)
