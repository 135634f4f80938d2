"""Partition schemes and their registry.

- `natural`: one client per group of a generator that makes data client by client (P1's
  synthetic data); the ground-truth cluster is the generator's.
- `pathological`: each client holds `classes_per_client` classes (P1: 40 clients x 3 classes,
  sizes in [470, 4116], 75/25 split). Classes are dealt cyclically over a shuffled class order,
  so every class serves the same number of clients (as in pFedMe's MNIST script, which gives
  user u the labels u, u+1, ... mod 10); a client's size is uniform in `size_range` and split
  evenly over its classes. Clients dealt the same set of classes share a ground-truth cluster.
  Reading of P1's numbers: 40 clients with sizes uniform in [470, 4116] ask for ~91,000
  samples on average, more than MNIST's 70,000 (each class serves 12 clients, ~27,000 per
  class against ~7,000). We do not scale sizes silently: a class that runs short is a
  UserError naming `size_range`, and the params must pick a range the dataset can serve
  (the report says which range was used).
- `iid`: uniform random split into clients of equal size (FedC's syn_unf).
The other schemes live in `label_skew`, `mixtures` and `clustered`; all are registered here.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options, require
from clusterfl.core.registry import Registry
from clusterfl.data.dataset import Dataset
from clusterfl.partition import clustered, label_skew, mixtures
from clusterfl.partition.base import Partition, split_train_test


@dataclass(frozen=True)
class NaturalOptions:
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        require(0 < self.test_fraction < 1, f"{key}.test_fraction", "must be in (0, 1)")


@dataclass(frozen=True)
class PathologicalOptions:
    num_clients: int = 40
    classes_per_client: int = 3
    size_range: tuple[int, ...] = (470, 4116)
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        require(self.num_clients > 0, f"{key}.num_clients", "must be > 0")
        require(self.classes_per_client > 0, f"{key}.classes_per_client", "must be > 0")
        lo_hi = self.size_range
        require(
            len(lo_hi) == 2 and 0 < lo_hi[0] <= lo_hi[1],
            f"{key}.size_range",
            "must be [min, max] with 0 < min <= max",
        )
        require(0 < self.test_fraction < 1, f"{key}.test_fraction", "must be in (0, 1)")


@dataclass(frozen=True)
class IidOptions:
    num_clients: int = 10
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        require(self.num_clients > 0, f"{key}.num_clients", "must be > 0")
        require(0 < self.test_fraction < 1, f"{key}.test_fraction", "must be in (0, 1)")


def _split_all(
    client_indices: list[np.ndarray], test_fraction: float, rng: np.random.Generator
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    pairs = [split_train_test(idx, test_fraction, rng) for idx in client_indices]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def natural(
    dataset: Dataset, opts: NaturalOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    if dataset.groups is None:
        raise UserError(f"{key}: scheme 'natural' needs a dataset with client groups;"
                        f" {dataset.name!r} has none (use it with a synthetic generator)")
    groups = dataset.groups
    clients = [np.flatnonzero(groups == g) for g in range(int(groups.max()) + 1)]
    train, test = _split_all(clients, opts.test_fraction, rng)
    return Partition(train, test, cluster=dataset.group_cluster)


def pathological(
    dataset: Dataset, opts: PathologicalOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    n_classes = dataset.num_classes
    c = opts.classes_per_client
    if c > n_classes:
        raise UserError(f"{key}.classes_per_client: {c} exceeds the {n_classes} classes")
    order = rng.permutation(n_classes)
    client_classes = [
        tuple(order[(k * c + j) % n_classes] for j in range(c)) for k in range(opts.num_clients)
    ]
    lo, hi = opts.size_range
    sizes = rng.integers(lo, hi + 1, opts.num_clients)
    pools = {
        cls: list(rng.permutation(np.flatnonzero(dataset.y == cls))) for cls in range(n_classes)
    }
    clients = []
    for k, classes in enumerate(client_classes):
        shares = np.full(c, sizes[k] // c)
        shares[: sizes[k] % c] += 1
        taken = []
        for cls, share in zip(classes, shares, strict=True):
            if len(pools[cls]) < share:
                raise UserError(
                    f"{key}.size_range: {opts.size_range} asks for more samples of class {cls} "
                    f"than {dataset.name!r} holds; lower size_range or num_clients"
                )
            taken.extend(pools[cls][:share])
            del pools[cls][:share]
        clients.append(np.array(taken, dtype=np.int64))
    cluster = label_skew.class_sets_to_clusters(client_classes)
    train, test = _split_all(clients, opts.test_fraction, rng)
    return Partition(train, test, cluster=cluster)


def iid(
    dataset: Dataset, opts: IidOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    chunks = np.array_split(rng.permutation(len(dataset.y)), opts.num_clients)
    train, test = _split_all(chunks, opts.test_fraction, rng)
    return Partition(train, test)


@dataclass(frozen=True)
class PartitionScheme:
    description: str
    options: type[Any]
    apply: Callable[..., Partition]


SCHEMES: Registry[PartitionScheme] = Registry("partition scheme")
SCHEMES.add("natural")(
    PartitionScheme("one client per generator group (synthetic data)", NaturalOptions, natural)
)
SCHEMES.add("pathological")(
    PartitionScheme(
        "c classes per client, sizes in a range, per-client train/test split",
        PathologicalOptions,
        pathological,
    )
)
SCHEMES.add("iid")(
    PartitionScheme("uniform random split, equal sizes (FedC syn_unf)", IidOptions, iid)
)
_MORE: dict[str, tuple[str, type[Any], Callable[..., Partition]]] = {
    "dirichlet": ("Dirichlet(alpha) label skew (NIID-Bench)", label_skew.DirichletOptions,
                  label_skew.dirichlet),
    "label_quantity": ("#C classes per client, split evenly (NIID-Bench)",
                       label_skew.LabelQuantityOptions, label_skew.label_quantity),
    "quantity_skew": ("i.i.d. labels, power-law client sizes", label_skew.QuantitySkewOptions,
                      label_skew.quantity_skew),
    "two_class": ("FedC MNIST_bals / MNIST_ubls: 2 classes per client, equal or power-law sizes",
                  label_skew.TwoClassOptions, label_skew.two_class),
    "fedsoft_mixture": ("FedSoft mixtures 10:90, 30:70, linear, random; held-out set per"
                        " distribution", mixtures.MixtureOptions, mixtures.fedsoft_mixture),
    "rotation": ("k rotation clusters of images (IFCA/CFL)", clustered.RotationOptions,
                 clustered.rotation),
    "label_permutation": ("k label-permutation clusters (concept shift, CFL)",
                          clustered.LabelPermutationOptions, clustered.label_permutation),
    "modality": ("mmFL: clients grouped by modality, Dirichlet label skew within",
                 clustered.ModalityOptions, clustered.modality),
    "similarity": ("FedC syn_noniid: k-means groups, one per client", clustered.SimilarityOptions,
                   clustered.similarity),
    "feature_noise": ("NIID-Bench feature noise, std growing with client index",
                      clustered.FeatureNoiseOptions, clustered.feature_noise),
}
for _name, _entry in _MORE.items():
    SCHEMES.add(_name)(PartitionScheme(*_entry))


def build_partition(
    dataset: Dataset, scheme: str, options: Mapping[str, Any] | None, seed: int, key: str
) -> Partition:
    """Apply scheme `scheme` with its params (named `key` in errors), drawing from `seed`."""
    entry = SCHEMES.get(scheme, f"{key}.scheme")
    opts = build_options(entry.options, options, key)
    return entry.apply(dataset, opts, np.random.default_rng(seed), key)
