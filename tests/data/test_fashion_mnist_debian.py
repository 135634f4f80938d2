"""The full Fashion-MNIST (60,000 + 10,000) loads offline from the Debian package's directory."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from clusterfl.data import build_dataset
from clusterfl.data.real import FASHION_DEBIAN_MIRROR


def _ensure_package() -> str | None:
    """None when the files are there (installing the package if we can), else why not."""
    if Path(FASHION_DEBIAN_MIRROR, "train-images-idx3-ubyte.gz").exists():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "needs Debian package dataset-fashion-mnist; not root or no apt-get to install it"
    try:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "dataset-fashion-mnist"]):
            subprocess.run(cmd, check=True, capture_output=True, timeout=300,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    except (subprocess.SubprocessError, OSError) as err:
        return f"could not install dataset-fashion-mnist with apt-get: {err}"
    return None


@pytest.fixture(scope="module")
def debian_fashion_mnist():
    reason = _ensure_package()
    if reason is not None:
        pytest.skip(reason)


def test_full_fashion_mnist_from_debian_mirror(debian_fashion_mnist, tmp_path):
    ds = build_dataset("fashion_mnist", {"cache_dir": str(tmp_path)}, "data")
    assert ds.x.shape == (70000, 1, 28, 28)
    assert np.bincount(ds.y).tolist() == [7000] * 10
    assert np.bincount(ds.split).tolist() == [60000, 10000]
