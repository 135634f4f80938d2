"""FedSoft's mixture partitions (Ruan & Joe-Wong 2022, "FedSoft: Soft Clustered Federated
Learning with Proximal Local Updating", Sec. 5 and Appendix C).

Distributions (`distributions` option):
- `domain`: one per `Dataset.domain` value (lower vs upper letters; the regression
  generator's S parameter vectors);
- `rotation`: the whole dataset seen through each of `rotations` (degrees, counterclockwise);
- `domain_x_rotation`: every (domain, rotation) pair (FedSoft's 4 letter distributions).
Rotated distributions of one domain draw from one pool, so no base sample is used twice.
`label_groups` (e.g. [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]) replaces the dataset's domains by
groups of classes, named `classes_0-4`, ...: the offline stand-in for the letters' two cases
on a dataset without domains (Fashion-MNIST); samples of classes in no group are not used.

Patterns (client k of N, mixture over S distributions):
- `10:90` / `30:70` (S = 2): the first half of the clients (0.1, 0.9), the second (0.9, 0.1);
- `linear` (S = 2): client k holds (k + 0.5) / N of A, i.e. (0.5 + k)% for N = 100;
- `random`: S - 1 cut points ~ Uniform(0, 1) split [0, 1]; the paper uses it for S > 2.
Client sizes n_k ~ Uniform{size_range}; the count from each distribution is n_k times its
share, rounded by largest remainder; `mixture` stores the exact target shares.
Held-out test set per distribution ("cluster models on held-out test sets drawn from each
distribution"): `holdout_size` samples, drawn first from the dataset's official test split
(`split` = 1) and never given to a client; clients draw from the training split first.
Client test sets: FedSoft evaluates local models on their own training data, so
`test_fraction` defaults to 0.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.data.dataset import Dataset
from clusterfl.partition.base import Partition, split_clients
from clusterfl.partition.label_skew import largest_remainder
from clusterfl.partition.views import encode


@dataclass(frozen=True)
class MixtureOptions:
    pattern: Literal["10:90", "30:70", "linear", "random"] = "10:90"
    distributions: Literal["domain", "rotation", "domain_x_rotation"] = "domain"
    rotations: tuple[float, ...] = (0.0, 90.0)
    num_clients: int = 100
    size_range: tuple[int, ...] = (100, 200)
    holdout_size: int = 1000
    test_fraction: float = 0.0
    label_groups: tuple[tuple[int, ...], ...] = ()

    def validate(self, key: str) -> None:
        require(self.num_clients > 1, f"{key}.num_clients", "must be > 1")
        lo_hi = self.size_range
        require(len(lo_hi) == 2 and 0 < lo_hi[0] <= lo_hi[1], f"{key}.size_range",
                "must be [min, max] with 0 < min <= max")
        require(self.holdout_size >= 0, f"{key}.holdout_size", "must be >= 0")
        require(0 <= self.test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")
        require(len(self.rotations) > 0, f"{key}.rotations", "must not be empty")
        classes = [c for group in self.label_groups for c in group]
        require(all(self.label_groups) and len(classes) == len(set(classes)),
                f"{key}.label_groups", "must be non-empty, disjoint lists of class labels")
        require(not (self.label_groups and self.distributions == "rotation"),
                f"{key}.label_groups", "needs distributions 'domain' or 'domain_x_rotation'")


def _group_name(group: tuple[int, ...]) -> str:
    run = tuple(range(group[0], group[0] + len(group)))
    if group == run and len(group) > 1:
        return f"classes_{group[0]}-{group[-1]}"
    return "classes_" + ",".join(map(str, group))


def label_group_domain(labels: np.ndarray, groups: tuple[tuple[int, ...], ...]
                       ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each sample's group index (-1: its class is in no group), and the groups' names."""
    domain = np.full(len(labels), -1, dtype=np.int64)
    for g, group in enumerate(groups):
        domain[np.isin(labels, group)] = g
    return domain, tuple(_group_name(group) for group in groups)


def mixture_matrix(pattern: str, num_clients: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """The (N, S) true mixture of each client under `pattern`."""
    if pattern == "random":
        cuts = np.sort(rng.uniform(0.0, 1.0, (num_clients, s - 1)), axis=1)
        edges = np.concatenate([np.zeros((num_clients, 1)), cuts, np.ones((num_clients, 1))], 1)
        return np.diff(edges, axis=1)
    if s != 2:
        raise UserError(f"pattern {pattern!r} needs exactly 2 distributions, got {s}")
    if pattern == "linear":
        a = (np.arange(num_clients) + 0.5) / num_clients
    else:
        minor = float(pattern.split(":")[0]) / 100
        a = np.where(np.arange(num_clients) < num_clients // 2, minor, 1.0 - minor)
    return np.stack([a, 1.0 - a], axis=1)


class _Pool:
    """One domain's samples: official-test first for hold-outs, training first for clients."""

    def __init__(self, test: np.ndarray, train: np.ndarray) -> None:
        self.test, self.train = list(test), list(train)

    def take(self, n: int, holdout: bool, what: str) -> np.ndarray:
        first, second = (self.test, self.train) if holdout else (self.train, self.test)
        if len(first) + len(second) < n:
            raise UserError(f"{what}: asks for more samples than the distribution holds")
        a = first[:n]
        del first[:n]
        b = second[: n - len(a)]
        del second[: n - len(a)]
        return np.array(a + b, dtype=np.int64)


def fedsoft_mixture(
    dataset: Dataset, opts: MixtureOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    n = len(dataset.y)
    if opts.label_groups:
        domain, domain_names = label_group_domain(dataset.y, opts.label_groups)
    elif opts.distributions == "rotation":
        domain, domain_names = np.zeros(n, np.int64), ("all",)
    elif dataset.domain is None:
        raise UserError(f"{key}.distributions: {opts.distributions!r} needs a dataset with"
                        f" domains or label_groups; {dataset.name!r} has no domains (use"
                        " 'rotation' or set label_groups)")
    else:
        domain, domain_names = dataset.domain, dataset.domain_names
    domains = [int(d) for d in np.unique(domain) if d >= 0]
    rotations = (0.0,) if opts.distributions == "domain" else opts.rotations
    dists = [(d, r) for d in domains for r in range(len(rotations))]
    names = tuple(
        domain_names[d] if opts.distributions == "domain" else
        (f"rot{rotations[r]:g}" if opts.distributions == "rotation" else
         f"{domain_names[d]}_rot{rotations[r]:g}") for d, r in dists
    )
    split = dataset.split if dataset.split is not None else np.zeros(n, np.int8)
    pools = {}
    for d in domains:
        members = rng.permutation(np.flatnonzero(domain == d))
        pools[d] = _Pool(members[split[members] == 1], members[split[members] != 1])
    mixture = mixture_matrix(opts.pattern, opts.num_clients, len(dists), rng)
    holdout = tuple(
        encode(r, pools[d].take(opts.holdout_size, True, f"{key}.holdout_size"), n)
        for d, r in dists
    )
    lo, hi = opts.size_range
    sizes = rng.integers(lo, hi + 1, opts.num_clients)
    clients = []
    for k in range(opts.num_clients):
        counts = largest_remainder(int(sizes[k]), mixture[k])
        clients.append(np.concatenate([
            encode(r, pools[d].take(int(c), False, f"{key}.size_range"), n)
            for (d, r), c in zip(dists, counts, strict=True)
        ]))
    train, test = split_clients(clients, opts.test_fraction, rng)
    views = tuple(f"rot{r:g}" for r in rotations) if opts.distributions != "domain" else ()
    return Partition(train, test, mixture=mixture, views=views, holdout=holdout,
                     distributions=names)
