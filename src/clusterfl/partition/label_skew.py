"""Label- and quantity-skew schemes (NIID-Bench, Li et al. 2022, "Federated Learning on Non-IID
Data Silos: An Experimental Study", Sec. 4; FedC's MNIST_bals / MNIST_ubls after Li et al.
2020, "On the Convergence of FedAvg on Non-IID Data").

- `dirichlet`: for each class, proportions over clients ~ Dir(alpha); as in NIID-Bench's code,
  a client that already holds more than its fair share (n / N) gets no more, and the draw is
  repeated until every client has at least `min_size` samples.
- `label_quantity` (NIID-Bench "#C = k"): client i holds class i mod K and k-1 further distinct
  random classes; each class is split evenly among the clients that hold it. Clients holding
  the same class set share a ground-truth cluster.
- `quantity_skew`: i.i.d. labels, client sizes from a power law (see `power_law_sizes`).
- `two_class` (FedC): each client holds `classes_per_client` classes dealt cyclically over a
  shuffled class order; `total_samples` are shared out equally (MNIST_bals) or by a power law
  (MNIST_ubls), each client's share split evenly over its classes.
Reading of "a power law" (neither paper gives the law): weights w_k = 1 + Pareto(exponent),
i.e. a Pareto type I tail with index `exponent`, sizes = min_size + shares of the rest in
proportion to w, rounded by largest remainder so that they add up exactly.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.data.dataset import Dataset
from clusterfl.partition.base import Partition, split_clients


def _check_common(key: str, num_clients: int, test_fraction: float) -> None:
    require(num_clients > 0, f"{key}.num_clients", "must be > 0")
    require(0 <= test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")


def largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    """Integers proportional to `weights` that add up to `total` exactly."""
    raw: np.ndarray = total * np.asarray(weights, dtype=np.float64) / np.sum(weights)
    out: np.ndarray = np.floor(raw).astype(np.int64)
    order = np.argsort(-(raw - out), kind="stable")
    out[order[: total - int(out.sum())]] += 1
    return out


def power_law_sizes(
    total: int, num_clients: int, exponent: float, min_size: int, rng: np.random.Generator
) -> np.ndarray:
    if total < num_clients * min_size:
        raise UserError(f"{total} samples cannot give {num_clients} clients {min_size} each")
    weights = 1.0 + rng.pareto(exponent, num_clients)
    return min_size + largest_remainder(total - num_clients * min_size, weights)


def class_sets_to_clusters(class_sets: list[tuple[int, ...]]) -> np.ndarray:
    ids = {s: i for i, s in enumerate(dict.fromkeys(tuple(sorted(s)) for s in class_sets))}
    return np.array([ids[tuple(sorted(s))] for s in class_sets], dtype=np.int64)


@dataclass(frozen=True)
class DirichletOptions:
    num_clients: int = 10
    alpha: float = 0.5
    min_size: int = 10
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        _check_common(key, self.num_clients, self.test_fraction)
        require(self.alpha > 0, f"{key}.alpha", "must be > 0")
        require(self.min_size >= 0, f"{key}.min_size", "must be >= 0")


def dirichlet_split(
    labels: np.ndarray, indices: np.ndarray, num_clients: int, alpha: float, min_size: int,
    rng: np.random.Generator, key: str = "scheme",
) -> list[np.ndarray]:
    """NIID-Bench's Dirichlet label skew of `indices` (rows of `labels`) over clients."""
    n = len(indices)
    for _ in range(1000):
        clients: list[list[int]] = [[] for _ in range(num_clients)]
        for c in np.unique(labels[indices]):
            members = rng.permutation(indices[labels[indices] == c])
            p = rng.dirichlet(np.full(num_clients, alpha))
            p = p * np.array([len(cl) < n / num_clients for cl in clients])
            cuts = (np.cumsum(p / p.sum()) * len(members)).astype(int)[:-1]
            for k, chunk in enumerate(np.split(members, cuts)):
                clients[k].extend(chunk.tolist())
        if min(len(cl) for cl in clients) >= min_size:
            return [np.sort(np.array(cl, dtype=np.int64)) for cl in clients]
    raise UserError(f"{key}.min_size: no Dirichlet draw gave every client {min_size} samples"
                    " in 1000 tries; lower min_size or num_clients, or raise alpha")


def dirichlet(
    dataset: Dataset, opts: DirichletOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    clients = dirichlet_split(dataset.y, np.arange(len(dataset.y)), opts.num_clients,
                              opts.alpha, opts.min_size, rng, key)
    train, test = split_clients(clients, opts.test_fraction, rng)
    return Partition(train, test)


@dataclass(frozen=True)
class LabelQuantityOptions:
    num_clients: int = 10
    classes_per_client: int = 2
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        _check_common(key, self.num_clients, self.test_fraction)
        require(self.classes_per_client > 0, f"{key}.classes_per_client", "must be > 0")


def label_quantity(
    dataset: Dataset, opts: LabelQuantityOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    k_classes, c = dataset.num_classes, opts.classes_per_client
    if c > k_classes:
        raise UserError(f"{key}.classes_per_client: {c} exceeds the {k_classes} classes")
    sets = []
    for i in range(opts.num_clients):
        others = rng.permutation(np.delete(np.arange(k_classes), i % k_classes))[: c - 1]
        sets.append((i % k_classes, *(int(o) for o in others)))
    parts: list[list[np.ndarray]] = [[] for _ in range(opts.num_clients)]
    for cls in range(k_classes):
        holders = [i for i, s in enumerate(sets) if cls in s]
        if not holders:  # a class no client drew is left out
            continue
        members = rng.permutation(np.flatnonzero(dataset.y == cls))
        for i, chunk in zip(holders, np.array_split(members, len(holders)), strict=False):
            parts[i].append(chunk)
    clients = [np.sort(np.concatenate(p)).astype(np.int64) for p in parts]
    train, test = split_clients(clients, opts.test_fraction, rng)
    return Partition(train, test, cluster=class_sets_to_clusters(sets))


@dataclass(frozen=True)
class QuantitySkewOptions:
    num_clients: int = 10
    exponent: float = 1.5
    min_size: int = 10
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        _check_common(key, self.num_clients, self.test_fraction)
        require(self.exponent > 0, f"{key}.exponent", "must be > 0")
        require(self.min_size >= 1, f"{key}.min_size", "must be >= 1")


def quantity_skew(
    dataset: Dataset, opts: QuantitySkewOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    sizes = power_law_sizes(len(dataset.y), opts.num_clients, opts.exponent, opts.min_size, rng)
    clients = np.split(rng.permutation(len(dataset.y)), np.cumsum(sizes)[:-1])
    train, test = split_clients(list(clients), opts.test_fraction, rng)
    return Partition(train, test)


@dataclass(frozen=True)
class TwoClassOptions:
    num_clients: int = 100
    classes_per_client: int = 2
    total_samples: int = 10000
    sizes: Literal["equal", "power_law"] = "equal"
    exponent: float = 1.5
    test_fraction: float = 0.0

    def validate(self, key: str) -> None:
        _check_common(key, self.num_clients, self.test_fraction)
        require(self.classes_per_client > 0, f"{key}.classes_per_client", "must be > 0")
        require(self.total_samples >= self.num_clients * self.classes_per_client,
                f"{key}.total_samples", "must give every client one sample of each class")
        require(self.exponent > 0, f"{key}.exponent", "must be > 0")


def two_class(
    dataset: Dataset, opts: TwoClassOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    k_classes, c, n = dataset.num_classes, opts.classes_per_client, opts.num_clients
    if c > k_classes:
        raise UserError(f"{key}.classes_per_client: {c} exceeds the {k_classes} classes")
    order = rng.permutation(k_classes)
    sets = [tuple(int(order[(i * c + j) % k_classes]) for j in range(c)) for i in range(n)]
    if opts.sizes == "equal":
        sizes = largest_remainder(opts.total_samples, np.ones(n))
    else:
        sizes = power_law_sizes(opts.total_samples, n, opts.exponent, c, rng)
    pools = {cls: rng.permutation(np.flatnonzero(dataset.y == cls)) for cls in range(k_classes)}
    used = dict.fromkeys(range(k_classes), 0)
    clients = []
    for i, classes in enumerate(sets):
        taken = []
        for cls, share in zip(classes, largest_remainder(int(sizes[i]), np.ones(c)), strict=True):
            if used[cls] + share > len(pools[cls]):
                raise UserError(f"{key}.total_samples: {opts.total_samples} asks for more of class"
                                f" {cls} than {dataset.name!r} holds")
            taken.append(pools[cls][used[cls]: used[cls] + share])
            used[cls] += share
        clients.append(np.sort(np.concatenate(taken)).astype(np.int64))
    train, test = split_clients(clients, opts.test_fraction, rng)
    return Partition(train, test, cluster=class_sets_to_clusters(sets))
