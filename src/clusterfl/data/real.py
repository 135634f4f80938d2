"""Real datasets fetched into a cache (see `download.fetch`), each read from its official files.

Checksums are the published ones (torchvision's tables for MNIST, Fashion-MNIST, CIFAR-10 and
EMNIST; the uncompressed IDX MD5s as listed by the original MNIST/Fashion-MNIST releases and
older torchvision). UCI publishes no checksum for UCI HAR: its SHA-256 is recorded in `info`.

Every loader pools the official train and test sets and marks them in `Dataset.split`
(0 = train, 1 = official test). Pixels are scaled to [0, 1]; images are (n, C, H, W).

EMNIST letters by case (FedSoft, Sec. 5: "2 distributions for the lower and uppercase letters,
each with 26 classes"): EMNIST's `letters` split merges the cases, so we read the `byclass`
split (classes 0-9 digits, 10-35 'A'-'Z', 36-61 'a'-'z'), drop the digits, and keep the letter
as the label (26 classes, shared by both cases) and the case as `domain` (0 lower, 1 upper).
Our reading: the same letter has the same label in either case. EMNIST stores images
transposed; we transpose them back, so that a 90-degree rotation means what it says.

UCI HAR (mmFL): the two modalities are the raw accelerometer (`total_acc_*`) and the gyroscope
(`body_gyro_*`) windows, 3 axes x 128 readings each; `groups` = subject (0..29).
CMU-MOSEI is read from a features file the user supplies (format in docs/data.md).
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.data.dataset import Dataset
from clusterfl.data.download import Resource, fetch, file_digest
from clusterfl.data.formats import (
    read_cifar10_tar,
    read_idx_gz,
    read_idx_gz_from_zip,
    read_mosei_npz,
    read_uci_har_zip,
)

DEFAULT_CACHE = "data/raw/cache"
FASHION_DEBIAN_MIRROR = "/usr/share/datasets/fashion-mnist/"

_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_MNIST_OLD = "http://yann.lecun.com/exdb/mnist/"
_FASHION = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_FASHION_GH = "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/"


def _idx(name: str, md5: str, content_md5: str, bases: tuple[str, ...]) -> Resource:
    return Resource(name, tuple(b + name for b in bases), md5, content_md5)


RESOURCES: dict[str, tuple[Resource, ...]] = {
    "mnist": (
        _idx("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873",
             "6bbc9ace898e44ae57da46a324031adb", (_MNIST, _MNIST_OLD)),
        _idx("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432",
             "a25bea736e30d166cdddb491f175f624", (_MNIST, _MNIST_OLD)),
        _idx("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3",
             "2646ac647ad5339dbf082846283269ea", (_MNIST, _MNIST_OLD)),
        _idx("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c",
             "27ae3e4e09519cfbb04c329615203637", (_MNIST, _MNIST_OLD)),
    ),
    "fashion_mnist": (
        _idx("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
             "f4a8712d7a061bf5bd6d2ca38dc4d50a", (_FASHION, _FASHION_GH)),
        _idx("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe",
             "9018921c3c673c538a1fc5bad174d6f9", (_FASHION, _FASHION_GH)),
        _idx("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79",
             "8181f5470baa50b63fa0f6fddb340f0a", (_FASHION, _FASHION_GH)),
        _idx("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310",
             "15d484375f8d13e6eb1aabb0c3f46965", (_FASHION, _FASHION_GH)),
    ),
    "cifar10": (
        Resource("cifar-10-python.tar.gz",
                 ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
                 "c58f30108f718f92721af3b95e74349a"),
    ),
    "emnist": (
        Resource("gzip.zip", ("https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip",
                              "https://www.itl.nist.gov/iaui/vip/cs_links/EMNIST/gzip.zip"),
                 "58c8d27c78d21e728a6bc7b3cc06412e"),
    ),
    "uci_har": (
        Resource("UCI HAR Dataset.zip", (
            "https://archive.ics.uci.edu/ml/machine-learning-databases/00240/UCI%20HAR%20Dataset.zip",
        )),
    ),
}


@dataclass(frozen=True)
class DownloadOptions:
    """`cache_dir`: where verified raw files live; `mirrors`: tried before the official URLs
    (local directories, file:// or http(s) base URLs)."""

    cache_dir: str = DEFAULT_CACHE
    mirrors: tuple[str, ...] = ()

    def validate(self, key: str) -> None:
        require(bool(self.cache_dir), f"{key}.cache_dir", "must not be empty")


@dataclass(frozen=True)
class FashionMnistOptions(DownloadOptions):
    """`subset`: keep that many images drawn uniformly without replacement with `seed`
    (None: all 70,000), for a CPU-sized benchmark; the scale is then one number."""

    mirrors: tuple[str, ...] = (FASHION_DEBIAN_MIRROR,)
    subset: int | None = None
    seed: int = 0

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.subset is None or self.subset > 0, f"{key}.subset",
                "must be > 0 (or null for every image)")


@dataclass(frozen=True)
class MoseiOptions:
    path: str = "data/raw/cmu_mosei.npz"

    def validate(self, key: str) -> None:
        require(bool(self.path), f"{key}.path", "must not be empty")


def _fetch_all(name: str, opts: DownloadOptions) -> list[Path]:
    return [fetch(r, Path(opts.cache_dir), opts.mirrors, name) for r in RESOURCES[name]]


def _idx_dataset(name: str, opts: DownloadOptions) -> Dataset:
    tr_x, tr_y, te_x, te_y = (read_idx_gz(p) for p in _fetch_all(name, opts))
    x = np.concatenate([tr_x, te_x])[:, None].astype(np.float32) / 255.0
    return Dataset(
        name=name,
        x=x,
        y=np.concatenate([tr_y, te_y]).astype(np.int64),
        num_classes=10,
        split=np.repeat(np.array([0, 1], np.int8), [len(tr_y), len(te_y)]),
        info={"source": f"official IDX files ({len(tr_y)} train + {len(te_y)} test)"},
    )


def mnist(opts: DownloadOptions, rng: np.random.Generator) -> Dataset:
    """MNIST, 60,000 + 10,000 images."""
    return _idx_dataset("mnist", opts)


def fashion_mnist(opts: FashionMnistOptions, rng: np.random.Generator) -> Dataset:
    """Fashion-MNIST, 60,000 + 10,000 images; the Debian package's directory is a mirror;
    `opts.subset` keeps a uniform random subset of that many (`subsample`)."""
    dataset = _idx_dataset("fashion_mnist", opts)
    return dataset if opts.subset is None else subsample(dataset, opts.subset, rng, "subset")


def subsample(dataset: Dataset, n: int, rng: np.random.Generator, key: str) -> Dataset:
    """`n` samples of an image dataset (no groups or domains) drawn without replacement,
    kept in their original order."""
    if n > len(dataset.y):
        raise UserError(f"{key}: {n} exceeds the {len(dataset.y)} samples of {dataset.name!r}")
    keep = np.sort(rng.choice(len(dataset.y), n, replace=False))
    split = None if dataset.split is None else dataset.split[keep]
    return dataclasses.replace(dataset, x=dataset.x[keep], y=dataset.y[keep], split=split,
                               info={**dataset.info, "subset": f"{n} of {len(dataset.y)}"})


def cifar10(opts: DownloadOptions, rng: np.random.Generator) -> Dataset:
    """CIFAR-10, 50,000 + 10,000 colour images (n, 3, 32, 32)."""
    (archive,) = _fetch_all("cifar10", opts)
    x, y, split = read_cifar10_tar(archive)
    return Dataset("cifar10", x.astype(np.float32) / 255.0, y, 10, split=split,
                   info={"source": "cifar-10-python.tar.gz"})


def emnist_letters_case(opts: DownloadOptions, rng: np.random.Generator) -> Dataset:
    """EMNIST byclass letters; label = letter (26), domain = case (0 lower, 1 upper)."""
    (archive,) = _fetch_all("emnist", opts)
    parts = []
    for i, part in enumerate(("train", "test")):
        images = read_idx_gz_from_zip(archive, f"gzip/emnist-byclass-{part}-images-idx3-ubyte.gz")
        labels = read_idx_gz_from_zip(archive, f"gzip/emnist-byclass-{part}-labels-idx1-ubyte.gz")
        keep = labels >= 10
        parts.append((images[keep].transpose(0, 2, 1), labels[keep].astype(np.int64), i))
    x = np.concatenate([p[0] for p in parts])[:, None].astype(np.float32) / 255.0
    byclass = np.concatenate([p[1] for p in parts])
    upper = byclass < 36
    return Dataset(
        name="emnist_letters_case",
        x=x,
        y=np.where(upper, byclass - 10, byclass - 36),
        num_classes=26,
        split=np.concatenate([np.full(len(p[1]), p[2], np.int8) for p in parts]),
        domain=upper.astype(np.int64),
        domain_names=("lower", "upper"),
        info={"source": "EMNIST byclass (gzip.zip), digits dropped"},
    )


def uci_har(opts: DownloadOptions, rng: np.random.Generator) -> Dataset:
    """UCI HAR raw inertial windows; modalities accelerometer and gyroscope (3 x 128 each)."""
    (archive,) = _fetch_all("uci_har", opts)
    har = read_uci_har_zip(archive)
    acc, gyro = har["accelerometer"], har["gyroscope"]
    return Dataset(
        name="uci_har",
        x=np.concatenate([acc.reshape(len(acc), -1), gyro.reshape(len(gyro), -1)], axis=1)
        .astype(np.float32),
        y=har["y"],
        num_classes=6,
        groups=har["subject"] - 1,
        split=har["split"],
        modalities=("accelerometer", "gyroscope"),
        modality_sizes=(acc[0].size, gyro[0].size),
        info={"source": "UCI HAR Dataset.zip", "sha256": file_digest(archive, "sha256")},
    )


def cmu_mosei(opts: MoseiOptions, rng: np.random.Generator) -> Dataset:
    """CMU-MOSEI features from the user's `.npz` (docs/data.md); each modality flattened."""
    modalities, label, split = read_mosei_npz(Path(opts.path))
    flat = [m.reshape(len(m), -1) for m in modalities.values()]
    return Dataset(
        name="cmu_mosei",
        x=np.concatenate(flat, axis=1),
        y=label,
        num_classes=int(label.max()) + 1,
        split=split,
        modalities=tuple(modalities),
        modality_sizes=tuple(f.shape[1] for f in flat),
        info={"source": str(opts.path), "sha256": file_digest(Path(opts.path), "sha256")},
    )
