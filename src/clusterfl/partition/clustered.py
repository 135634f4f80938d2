"""Hard-clustered schemes whose clusters come from a transform, a modality or similarity.

- `rotation` (IFCA, Ghosh et al. 2020, rotated MNIST/CIFAR; CFL, Sattler et al. 2020): the
  clients are split into k equal contiguous clusters; cluster j sees its i.i.d. share of the
  data rotated by 360 j / k degrees (k = 4: 0, 90, 180, 270). Each sample goes to one client.
  `total_samples` (optional) keeps a uniform draw of that many images, shared out the same
  way (a CPU-sized share of a large dataset); by default every image is used.
- `label_permutation` (concept shift; CFL, Sattler et al. 2020, Sec. VI's permuted labels):
  the same equal contiguous clusters and i.i.d. shares as `rotation`, but cluster j sees
  the true images with its labels permuted by p_j (view `labels:p_j`, label y shown as
  p_j[y]). Cluster 0 keeps the true labels when `identity_first` (default); the others draw
  p_j uniformly from the generator, redrawn until all k permutations differ.
- `modality` (mmFL, P3): clients grouped by modality, `clients_per_modality` each (Fig. 2: 3);
  the samples are shared out at random between the modalities (a client with only an
  accelerometer holds its own recordings; reading: the groups hold disjoint recordings), and
  within each group by Dirichlet(alpha) label skew (the paper says only "non-IID"); with
  `clients: subjects` the dataset's subjects are the clients instead, dealt to the modalities,
  and its own train/test split is kept (`subject_modality`); with `clients: recordings` the
  dataset's whole recordings are dealt out instead, by label skew (`recording_modality`);
  `test: pooled` scores each client on its modality's pooled test samples instead of its
  own (`pooled_tests`); `modalities` picks some of the dataset's modalities (cluster j = the
  j-th named).
- `similarity` (FedC's syn_noniid): k-means (scikit-learn, one k-means++ initialisation) on
  the flattened features into `num_clients` groups, group j -> client j. The ground truth kept
  is each client's mixture over the true labels (clients straddle clusters).
- `feature_noise` (NIID-Bench): an i.i.d. equal split; client i's features get Gaussian noise
  of std `noise * i / (N - 1)` (NIID-Bench's code), through `noise<std>` views.
"""

import math
from dataclasses import dataclass

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.data.dataset import Dataset
from clusterfl.partition.base import Partition, split_clients
from clusterfl.partition.label_skew import dirichlet_split
from clusterfl.partition.views import encode


@dataclass(frozen=True)
class RotationOptions:
    num_clients: int = 40
    rotations: int = 4
    test_fraction: float = 0.25
    total_samples: int | None = None  # None: every image of the dataset

    def validate(self, key: str) -> None:
        require(self.rotations > 0, f"{key}.rotations", "must be > 0")
        require(self.total_samples is None or self.total_samples >= 2 * self.num_clients,
                f"{key}.total_samples", "must be >= 2 x num_clients (or null for all images)")
        require(self.num_clients >= self.rotations, f"{key}.num_clients", "must be >= rotations")
        require(0 <= self.test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")


def rotation(
    dataset: Dataset, opts: RotationOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    if dataset.x.ndim != 4:
        raise UserError(f"{key}: scheme 'rotation' needs images; {dataset.name!r} has features"
                        f" of shape {dataset.feature_shape}")
    n = len(dataset.y)
    if opts.total_samples is not None and opts.total_samples > n:
        raise UserError(f"{key}.total_samples: {opts.total_samples} > the {n} images of "
                        f"{dataset.name!r}")
    cluster = np.arange(opts.num_clients) * opts.rotations // opts.num_clients
    chunks = np.array_split(rng.permutation(n)[: opts.total_samples], opts.num_clients)
    clients = [encode(int(c), np.sort(ch), n) for c, ch in zip(cluster, chunks, strict=True)]
    train, test = split_clients(clients, opts.test_fraction, rng)
    views = tuple(f"rot{360 * j / opts.rotations:g}" for j in range(opts.rotations))
    return Partition(train, test, cluster=cluster, views=views)


@dataclass(frozen=True)
class LabelPermutationOptions:
    num_clients: int = 40
    clusters: int = 4
    test_fraction: float = 0.25
    total_samples: int | None = None  # None: every sample of the dataset
    identity_first: bool = True  # cluster 0 keeps the true labels

    def validate(self, key: str) -> None:
        require(self.clusters > 0, f"{key}.clusters", "must be > 0")
        require(self.num_clients >= self.clusters, f"{key}.num_clients", "must be >= clusters")
        require(self.total_samples is None or self.total_samples >= 2 * self.num_clients,
                f"{key}.total_samples", "must be >= 2 x num_clients (or null for all samples)")
        require(0 <= self.test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")


def draw_permutations(classes: int, k: int, identity_first: bool,
                      rng: np.random.Generator) -> list[np.ndarray]:
    """k distinct permutations of range(classes); the first the identity if asked."""
    perms = [np.arange(classes)] if identity_first else []
    while len(perms) < k:
        p = rng.permutation(classes)
        if not any(np.array_equal(p, q) for q in perms):
            perms.append(p)
    return perms


def label_permutation(
    dataset: Dataset, opts: LabelPermutationOptions, rng: np.random.Generator,
    key: str = "scheme"
) -> Partition:
    classes, n = dataset.num_classes, len(dataset.y)
    if dataset.is_regression:
        raise UserError(f"{key}: scheme 'label_permutation' needs class labels; "
                        f"{dataset.name!r} is a regression dataset")
    if opts.clusters > math.factorial(classes):
        raise UserError(f"{key}.clusters: {opts.clusters} distinct permutations of "
                        f"{classes} classes do not exist")
    if opts.total_samples is not None and opts.total_samples > n:
        raise UserError(f"{key}.total_samples: {opts.total_samples} > the {n} samples of "
                        f"{dataset.name!r}")
    perms = draw_permutations(classes, opts.clusters, opts.identity_first, rng)
    cluster = np.arange(opts.num_clients) * opts.clusters // opts.num_clients
    chunks = np.array_split(rng.permutation(n)[: opts.total_samples], opts.num_clients)
    clients = [encode(int(c), np.sort(ch), n) for c, ch in zip(cluster, chunks, strict=True)]
    train, test = split_clients(clients, opts.test_fraction, rng)
    views = tuple("labels:" + ",".join(str(int(v)) for v in p) for p in perms)
    return Partition(train, test, cluster=cluster, views=views)


@dataclass(frozen=True)
class ModalityOptions:
    clients_per_modality: int = 3
    alpha: float = 0.5
    min_size: int = 10
    test_fraction: float = 0.25
    modalities: tuple[str, ...] = ()  # which of the dataset's modalities; () = all
    clients: str = "dirichlet"  # "subjects": the dataset's groups; "recordings": label skew
    test: str = "own"  # or "pooled": every client scored on its modality's test samples

    def validate(self, key: str) -> None:
        require(self.clients in ("dirichlet", "subjects", "recordings"), f"{key}.clients",
                "must be dirichlet, subjects or recordings")
        require(self.test in ("own", "pooled"), f"{key}.test", "must be own or pooled")
        require(self.clients_per_modality > 0, f"{key}.clients_per_modality", "must be > 0")
        require(self.alpha > 0, f"{key}.alpha", "must be > 0")
        require(0 <= self.test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")


def modality(
    dataset: Dataset, opts: ModalityOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    if not dataset.modalities:
        raise UserError(f"{key}: scheme 'modality' needs a multimodal dataset; {dataset.name!r}"
                        " has no modalities (use uci_har, basic_motions or cmu_mosei)")
    names = opts.modalities or dataset.modalities
    for name in names:
        if name not in dataset.modalities:
            raise UserError(f"{key}.modalities: {name!r} is not a modality of {dataset.name!r}"
                            f" (allowed: {', '.join(dataset.modalities)})")
    if opts.clients == "subjects":
        part = subject_modality(dataset, names, rng, key)
    elif opts.clients == "recordings":
        part = recording_modality(dataset, names, opts, rng, key)
    else:
        part = dirichlet_modality(dataset, names, opts, rng, key)
    if opts.test == "pooled" and part.cluster is not None:
        return Partition(part.train, pooled_tests(part.test, part.cluster), part.cluster,
                         views=part.views)
    return part


def pooled_tests(test: tuple[np.ndarray, ...], cluster: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each client's test set replaced by its cluster's (modality's) pooled test samples."""
    pooled = {int(g): np.sort(np.concatenate([t for t, c in zip(test, cluster, strict=True)
                                              if c == g])) for g in np.unique(cluster)}
    return tuple(pooled[int(g)] for g in cluster)


def dirichlet_modality(dataset: Dataset, names: tuple[str, ...], opts: ModalityOptions,
                       rng: np.random.Generator, key: str) -> Partition:
    """`modality`'s samples dealt at random to the modalities, then Dirichlet label skew."""
    n, m = len(dataset.y), len(names)
    groups = np.array_split(rng.permutation(n), m)
    clients, cluster = [], []
    for g, members in enumerate(groups):
        for part in dirichlet_split(dataset.y, np.sort(members), opts.clients_per_modality,
                                    opts.alpha, opts.min_size, rng, key):
            clients.append(encode(g, part, n))
            cluster.append(g)
    train, test = split_clients(clients, opts.test_fraction, rng)
    views = tuple(f"modality:{name}" for name in names)
    return Partition(train, test, cluster=np.array(cluster), views=views)


def subject_modality(dataset: Dataset, names: tuple[str, ...], rng: np.random.Generator,
                     key: str) -> Partition:
    """`modality` with real clients: the subjects (`dataset.groups`) dealt at random to the
    modalities, each subject one client of its modality holding all its samples; train and
    test as the dataset splits them (`dataset.split`, e.g. by recording), never redrawn."""
    if dataset.groups is None or dataset.split is None:
        raise UserError(f"{key}.clients: 'subjects' needs a dataset with subjects (groups) and "
                        f"a train/test split; {dataset.name!r} has "
                        f"{'no groups' if dataset.groups is None else 'no split'}")
    n = len(dataset.y)
    subjects = rng.permutation(np.unique(dataset.groups))
    train, test, cluster = [], [], []
    for g, share in enumerate(np.array_split(subjects, len(names))):
        for subject in np.sort(share):
            mine = dataset.groups == subject
            train.append(encode(g, np.flatnonzero(mine & (dataset.split == 0)), n))
            test.append(encode(g, np.flatnonzero(mine & (dataset.split == 1)), n))
            cluster.append(g)
    views = tuple(f"modality:{name}" for name in names)
    return Partition(tuple(train), tuple(test), cluster=np.array(cluster), views=views)


def recording_modality(dataset: Dataset, names: tuple[str, ...], opts: ModalityOptions,
                       rng: np.random.Generator, key: str) -> Partition:
    """`modality` over whole recordings (`dataset.extras["recording"]`): the recordings dealt
    at random to the modalities in equal shares, then within each by Dirichlet(alpha) label
    skew over the recordings (each labelled by its samples' label; `min_size` counts
    recordings), every sample of a recording with its client; train and test as the dataset
    splits them (`dataset.split`: the watch data's recording tails), never redrawn."""
    recording = dataset.extras.get("recording")
    if recording is None or dataset.split is None:
        raise UserError(f"{key}.clients: 'recordings' needs a dataset with recording ids "
                        f"(extras) and a train/test split; {dataset.name!r} has none")
    n = len(dataset.y)
    ids, first = np.unique(recording, return_index=True)
    labels = dataset.y[first]
    train, test, cluster = [], [], []
    for g, share in enumerate(np.array_split(rng.permutation(len(ids)), len(names))):
        for part in dirichlet_split(labels, np.sort(share), opts.clients_per_modality,
                                    opts.alpha, opts.min_size, rng, key):
            mine = np.isin(recording, ids[part])
            train.append(encode(g, np.flatnonzero(mine & (dataset.split == 0)), n))
            test.append(encode(g, np.flatnonzero(mine & (dataset.split == 1)), n))
            cluster.append(g)
    views = tuple(f"modality:{name}" for name in names)
    return Partition(tuple(train), tuple(test), cluster=np.array(cluster), views=views)


@dataclass(frozen=True)
class SimilarityOptions:
    num_clients: int = 100
    test_fraction: float = 0.0

    def validate(self, key: str) -> None:
        require(self.num_clients > 0, f"{key}.num_clients", "must be > 0")
        require(0 <= self.test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")


def similarity(
    dataset: Dataset, opts: SimilarityOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    from sklearn.cluster import KMeans

    if opts.num_clients > len(dataset.y):
        raise UserError(f"{key}.num_clients: more clients than the {len(dataset.y)} samples")
    features = dataset.x.reshape(len(dataset.x), -1)
    seed = int(rng.integers(0, 2**31 - 1))
    groups = KMeans(opts.num_clients, n_init=1, random_state=seed).fit_predict(features)
    clients = [np.flatnonzero(groups == j) for j in range(opts.num_clients)]
    mixture = None
    distributions: tuple[str, ...] = ()
    if not dataset.is_regression:
        k = dataset.num_classes
        counts = np.stack([np.bincount(dataset.y[c], minlength=k) for c in clients])
        mixture = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        distributions = tuple(f"class{c}" for c in range(dataset.num_classes))
    train, test = split_clients(clients, opts.test_fraction, rng)
    return Partition(train, test, mixture=mixture, distributions=distributions)


@dataclass(frozen=True)
class FeatureNoiseOptions:
    num_clients: int = 10
    noise: float = 0.1
    test_fraction: float = 0.25

    def validate(self, key: str) -> None:
        require(self.num_clients > 1, f"{key}.num_clients", "must be > 1")
        require(self.noise >= 0, f"{key}.noise", "must be >= 0")
        require(0 <= self.test_fraction < 1, f"{key}.test_fraction", "must be in [0, 1)")


def feature_noise(
    dataset: Dataset, opts: FeatureNoiseOptions, rng: np.random.Generator, key: str = "scheme"
) -> Partition:
    n = len(dataset.y)
    chunks = np.array_split(rng.permutation(n), opts.num_clients)
    clients = [encode(i, np.sort(ch), n) for i, ch in enumerate(chunks)]
    train, test = split_clients(clients, opts.test_fraction, rng)
    views = tuple(f"noise{opts.noise * i / (opts.num_clients - 1):g}"
                  for i in range(opts.num_clients))
    return Partition(train, test, views=views)
