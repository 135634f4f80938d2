"""A report reads a partition's true mixtures from the partition file or, in reference
results (which carry no generated data), from its summary: the same numbers either way."""

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.partition import Partition, save_partition
from clusterfl.reports.mixtures import read_mixtures, summary_file, write_summary


def _partition(mixture: np.ndarray | None) -> Partition:
    parts = tuple(np.array([2 * k, 2 * k + 1]) for k in range(3))
    return Partition(parts, tuple(np.array([10 + k]) for k in range(3)), mixture=mixture,
                     distributions=("rot0", "rot180") if mixture is not None else ())


def test_the_summary_gives_the_partition_files_mixtures_exactly(tmp_path):
    mixture = np.array([[0.1, 0.9], [1 / 3, 2 / 3], [0.5, 0.5]])
    save_partition(_partition(mixture), tmp_path / "data/mix/seed0.npz")
    from_file = read_mixtures(tmp_path / "data", "mix", 0)
    write_summary(tmp_path / "data/mix/seed0.npz", summary_file(tmp_path / "ref", "mix", 0))
    from_summary = read_mixtures(tmp_path / "ref", "mix", 0)
    assert from_file.distributions == from_summary.distributions == ("rot0", "rot180")
    assert np.array_equal(from_summary.mixture, mixture)  # 1/3 survives the JSON round trip
    assert np.array_equal(from_file.mixture, mixture)


def test_a_partition_without_mixtures_reads_none(tmp_path):
    save_partition(_partition(None), tmp_path / "p/seed1.npz")
    write_summary(tmp_path / "p/seed1.npz", summary_file(tmp_path / "ref", "p", 1))
    assert read_mixtures(tmp_path / "ref", "p", 1).mixture is None


def test_neither_file_nor_summary_names_both(tmp_path):
    with pytest.raises(UserError, match=r"mix/seed2\.npz: no partition file and no summary "
                                        r"seed2\.mixture\.json"):
        read_mixtures(tmp_path, "mix", 2)
    summary_file(tmp_path, "mix", 2).parent.mkdir(parents=True)
    summary_file(tmp_path, "mix", 2).write_text('{"distributions": ["a"]}')
    with pytest.raises(UserError, match="not a mixture summary"):
        read_mixtures(tmp_path, "mix", 2)
