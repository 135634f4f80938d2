"""The bottom layer: the values and protocols every layer passes around, importing nothing
else of the project (only the standard library, numpy and torch).

Keeping them here is what keeps the layers acyclic: the engine trains `Tensors`, the loop
hands a `View` to each `Evaluator`, algorithms build a `RunContext` from `SeedInputs`, and
none of these modules needs another to name what it exchanges with it. A type whose
producer sits higher (the suite's `Experiment`, a neural `Schedule`) appears here as the
Protocol of what the lower layers read of it.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

Tensors = dict[str, torch.Tensor]  # stacked models: parameter name -> [rows, ...]


# -- data -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dataset:
    """Features `x` (float32, one row per sample) and labels `y`.

    - `y` holds integer class labels; for regression sources `num_classes == 0` and `y` holds
      float targets.
    - `groups` is set by sources that generate data client by client (the synthetic generators,
      or a real set's subjects): the natural client of each sample; `group_cluster` holds the
      true cluster of each group.
    - `split` marks the official split of each sample where the source has one: 0 = train,
      1 = the official test set (MNIST's t10k, CIFAR's test_batch, ...). Loaders pool both so
      that schemes which repartition per client (P1) see all of it; schemes that need a
      held-out test set per distribution (FedSoft) draw it from the split-1 samples first.
    - `domain` is the distribution of each sample where a source defines several (FedSoft's
      lower/upper-case letters, its regression generator's S distributions), named by
      `domain_names`.
    - `modalities` / `modality_sizes`: for multimodal sources, `x` is (n, sum(modality_sizes))
      and its columns are the modalities in this order, each flattened (see `modality_slice`).
    - `extras`: ground-truth arrays of a generator (FedC's W and H, the regression optima).
    - Images are (n, channels, height, width); models flatten them as needed.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    num_classes: int
    groups: np.ndarray | None = None
    group_cluster: np.ndarray | None = None
    info: dict[str, str] = field(default_factory=dict)
    split: np.ndarray | None = None
    domain: np.ndarray | None = None
    domain_names: tuple[str, ...] = ()
    modalities: tuple[str, ...] = ()
    modality_sizes: tuple[int, ...] = ()
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.x)
        if n != len(self.y):
            raise ValueError(f"{self.name}: {n} samples but {len(self.y)} labels")
        for attr in ("groups", "split", "domain"):
            value = getattr(self, attr)
            if value is not None and len(value) != n:
                raise ValueError(f"{self.name}: {attr} has {len(value)} entries for {n} samples")
        if len(self.modalities) != len(self.modality_sizes):
            raise ValueError(f"{self.name}: modalities and modality_sizes differ in length")
        if self.modalities and sum(self.modality_sizes) != int(np.prod(self.x.shape[1:])):
            raise ValueError(f"{self.name}: modality sizes do not add up to the feature size")

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])

    @property
    def is_regression(self) -> bool:
        return self.num_classes == 0

    def modality_slice(self, modality: str) -> slice:
        """The columns of `x` that hold `modality`."""
        i = self.modalities.index(modality)
        start = sum(self.modality_sizes[:i])
        return slice(start, start + self.modality_sizes[i])


@dataclass(frozen=True)
class Partition:
    """Per-client train/test index arrays into one `Dataset`.

    `cluster[k]` is client k's true cluster where the scheme defines one (else None);
    `mixture[k, s]` its true share of distribution s for mixture schemes, the columns named
    by `distributions`. `holdout[s]` is the held-out test set of distribution s (FedSoft).

    Views: schemes that show samples transformed (rotation clusters, feature noise, one
    modality of a multimodal set) list the transforms in `views` (names understood by
    `clusterfl.partition.views`); their index arrays then encode `view * len(dataset) +
    sample`. Read a client's data with `views.client_data`, which decodes and applies them.
    With no views, indices are plain row numbers of the dataset.
    """

    train: tuple[np.ndarray, ...]
    test: tuple[np.ndarray, ...]
    cluster: np.ndarray | None = None
    mixture: np.ndarray | None = None
    views: tuple[str, ...] = ()
    holdout: tuple[np.ndarray, ...] = ()
    distributions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.train) != len(self.test):
            raise ValueError("train and test must list the same clients")
        if self.cluster is not None and len(self.cluster) != len(self.train):
            raise ValueError("cluster must have one entry per client")
        if self.mixture is not None and len(self.mixture) != len(self.train):
            raise ValueError("mixture must have one row per client")

    @property
    def num_clients(self) -> int:
        return len(self.train)

    def train_sizes(self) -> np.ndarray:
        return np.array([len(t) for t in self.train])

    def test_sizes(self) -> np.ndarray:
        return np.array([len(t) for t in self.test])


# -- one seed's inputs ----------------------------------------------------------------------
class ScheduleSpec(Protocol):
    """What the model-free loop reads of a schedule (`clusterfl.algorithms.Schedule`)."""

    @property
    def rounds(self) -> int: ...

    @property
    def clients_per_round(self) -> int | None: ...  # None: every client, every round


class ExperimentSpec(Protocol):
    """What `make_context` reads of an experiment (`clusterfl.run.config.Experiment`, which sits
    above the algorithms: the suite's config names them)."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def model_options(self) -> Mapping[str, object]: ...

    @property
    def schedule(self) -> ScheduleSpec: ...

    @property
    def algorithm_options(self) -> Mapping[str, object]: ...  # hyperparameters it sets


@dataclass(frozen=True)
class SeedInputs:
    """Everything an algorithm's `make_context` may read to set up one seed."""

    experiment: ExperimentSpec
    dataset: Dataset
    partition: Partition
    seed: int
    engine: str = "vectorized"  # neural algorithms: the local-training engine
    device: str = "cpu"


# -- the round loop and its evaluators ------------------------------------------------------


@dataclass(frozen=True)
class GroundTruth:
    """What the partition knows about its clients, for scoring (never for training)."""

    cluster: np.ndarray | None = None  # [N]: each client's true cluster
    mixture: np.ndarray | None = None  # [N, D]: each client's true share of distribution d
    extras: Mapping[str, Any] = field(default_factory=dict)  # e.g. P4's true optima


@dataclass
class RunContext:
    """What every algorithm gets besides its hyperparameters."""

    seed: int
    num_clients: int
    rounds: int
    clients_per_round: int | None = None  # None: every client takes part every round
    truth: GroundTruth = field(default_factory=GroundTruth)


@dataclass(frozen=True)
class View:
    """A read-only look at an algorithm after a round: what evaluators may read.

    Fields an algorithm does not have stay None (a centre-free algorithm has no `centers`).
    """

    client_models: Tensors | None = None  # [N, ...]: the model each client would use now
    centers: Tensors | None = None  # [S, ...]: cluster models or mixture components
    importance: torch.Tensor | None = None  # [N, S]: each client's weight on each center
    assignment: torch.Tensor | None = None  # [N]: each client's cluster
    extras: Mapping[str, Any] = field(default_factory=dict)  # what a paper's evaluator reads


class Evaluator(Protocol):
    """Measures a `View` every round (registered in `clusterfl.evaluators`)."""

    @property
    def primary(self) -> str | None:
        """The metric this evaluator's task is summarised by, if any."""
        ...

    def evaluate(self, view: View) -> dict[str, float]: ...

    def arrays(self, view: View) -> dict[str, list[Any]]: ...
