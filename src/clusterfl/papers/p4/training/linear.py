"""What P4's algorithm classes share: the stacked least-squares clients of Sec. 4 as a run
context, the hyperparameters, and the base class that keeps the clients' personal models.

Readings (the numerical ones are in `momentum`, `threshold` and `rounds`):
- Sec. 4 trains on "agent i's samples" and scores parameters, not predictions, so a client
  trains on *all* its samples: the partition's train and test indices joined (the catalogue's
  `natural` scheme always holds out a test share; without the join a client of Fig. 1 would
  have 7 of its n = 9 samples).
- The true optima x*_k are the dataset's `extras["optima"]` ([K, d], row k = cluster k, as
  `threshold_regression` labels its clusters); they go to `GroundTruth.extras["optima"]`,
  read only by the `optimum_error` evaluator.
- `init_scale` s: x_0 ~ N(0, s^2 I) (Sec. 4: s = 1). The paper's "less sensitive to the
  model's initial weights" names no scale; our sweep is s in {1, 10, 100}. `start` (shared,
  per_cluster, per_client; `rounds.initial_state`) says who shares a draw.
- Data per trial: Sec. 4 averages "5 trials" without saying what a trial redraws. With
  `data_draw: trial` (default) trial (seed) s draws its own a_i and x*_k from data seed
  `data_seed_offset` + s, with the catalogue dataset's shapes and optimum values; `fixed`
  keeps the one catalogue draw for every trial. A nonzero offset gives draws disjoint from
  the reported trials, on which the threshold scale is chosen (docs/p4.md). Both are read
  per experiment (`algorithm_options`), since the context is built before the algorithm.
- One "round" of the loop is one round t of Algorithms 2-3 (one momentum, one server step).
"""

from dataclasses import dataclass, fields
from typing import Literal, TypeVar

import numpy as np
import torch

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.core.types import Dataset, GroundTruth, RunContext, SeedInputs, View
from clusterfl.data.synthetic import ThresholdRegressionOptions, threshold_regression
from clusterfl.papers.p4.training.momentum import LinearClients, LocalUpdate, stack_clients
from clusterfl.papers.p4.training.rounds import (
    STARTS,
    Clustering,
    MomentumState,
    Start,
    initial_state,
)
from clusterfl.partition.views import client_data
from clusterfl.training.loop import FederatedAlgorithm


@dataclass(frozen=True)
class StepHyper(LocalUpdate):
    """Client side (`momentum.LocalUpdate`) and the initial models' scale."""

    init_scale: float = 1.0
    start: Start = "shared"
    data_draw: Literal["trial", "fixed"] = "trial"
    data_seed_offset: int = 0

    def validate(self, key: str) -> None:
        require(self.option in (1, 2), f"{key}.option", "must be 1 or 2")
        require(self.init_scale >= 0, f"{key}.init_scale", "must be >= 0")
        require(self.start in STARTS, f"{key}.start", f"must be one of {', '.join(STARTS)}")
        require(self.data_draw in ("trial", "fixed"), f"{key}.data_draw",
                "must be 'trial' or 'fixed'")
        require(self.data_seed_offset >= 0, f"{key}.data_seed_offset", "must be >= 0")
        super().validate(key)

    @property
    def update(self) -> LocalUpdate:
        """The client-side settings alone, as the pure round functions take them."""
        return LocalUpdate(**{f.name: getattr(self, f.name) for f in fields(LocalUpdate)})


@dataclass(frozen=True)
class ClusterHyper(StepHyper, Clustering):
    """PFL-TC / PDL-TC: the client side plus Threshold-Clustering's settings (`Clustering`)."""

    def validate(self, key: str) -> None:
        super().validate(key)  # the client side (StepHyper, LocalUpdate)
        Clustering.validate(self, key)

    @property
    def clustering(self) -> Clustering:
        """The clustering settings alone, as the pure round functions take them."""
        return Clustering(**{f.name: getattr(self, f.name) for f in fields(Clustering)})


@dataclass
class LinearContext(RunContext):
    """The run's clients as stacked tensors, and the true clusters as a tensor."""

    data: LinearClients | None = None
    cluster: torch.Tensor | None = None  # [N] int64
    data_draw: tuple[str, int] = ("fixed", 0)  # (data_draw, data_seed_offset) it was built with


DATA_KEYS = ("data_draw", "data_seed_offset")


def data_settings(run: SeedInputs, hyper: type) -> tuple[str, int]:
    """(data_draw, data_seed_offset) of the run's experiment, else the Hyper's defaults."""
    options = {**{k: getattr(hyper(), k) for k in DATA_KEYS},
               **{k: v for k, v in run.experiment.algorithm_options.items() if k in DATA_KEYS}}
    return str(options["data_draw"]), int(options["data_seed_offset"])


def trial_dataset(dataset: Dataset, seed: int) -> Dataset:
    """`threshold_regression` redrawn from data seed `seed`, with `dataset`'s shapes and
    optimum values: the same rows belong to the same client and cluster."""
    optima = np.asarray(dataset.extras["optima"])
    clusters = np.asarray(dataset.group_cluster)
    opts = ThresholdRegressionOptions(
        num_clusters=optima.shape[0], clients_per_cluster=int(np.sum(clusters == 0)),
        samples_per_client=int(np.sum(np.asarray(dataset.groups) == 0)),
        dimension=optima.shape[1],
        optimum_values=tuple(float(v) for v in dataset.extras["optimum_values"]), seed=seed)
    return threshold_regression(opts, np.random.default_rng(seed))


def linear_context(run: SeedInputs, draw: str = "fixed", offset: int = 0) -> LinearContext:
    """`FederatedAlgorithm.make_context` plus every client's samples (train + test joined)
    and the true optima in `truth.extras`; with `draw` "trial" the data of data seed
    `offset` + the run's seed (`trial_dataset`)."""
    base = FederatedAlgorithm.make_context(run)
    dataset, partition = run.dataset, run.partition
    if draw == "trial":
        dataset = trial_dataset(dataset, offset + run.seed)
    xs, ys = [], []
    for k in range(partition.num_clients):
        parts = [client_data(dataset, partition, k, split) for split in ("train", "test")]
        xs.append(np.concatenate([p[0] for p in parts]).astype(np.float64))
        ys.append(np.concatenate([p[1] for p in parts]).astype(np.float64))
    offsets = np.cumsum([0] + [len(y) for y in ys])
    indices = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(ys))]
    data = stack_clients(np.concatenate(xs), np.concatenate(ys), indices)
    truth = GroundTruth(cluster=base.truth.cluster, mixture=base.truth.mixture,
                        extras={"optima": np.asarray(dataset.extras["optima"], np.float64)})
    cluster = torch.as_tensor(np.asarray(partition.cluster), dtype=torch.int64)
    fields = {k: v for k, v in vars(base).items() if k != "truth"}
    return LinearContext(**fields, truth=truth, data=data, cluster=cluster,
                         data_draw=(draw, offset))


# the hyperparameters of a linear-problem algorithm extend the client side's
S = TypeVar("S", bound=StepHyper)


class LinearProblem(FederatedAlgorithm[S]):
    """An algorithm over the stacked least-squares clients (`LinearContext`)."""

    ctx: LinearContext

    @classmethod
    def make_context(cls, run: SeedInputs) -> LinearContext:
        return linear_context(run, *data_settings(run, cls.Hyper))

    def __init__(self, hyper: S, ctx: LinearContext) -> None:
        super().__init__(hyper, ctx)
        if ctx.data_draw != (hyper.data_draw, hyper.data_seed_offset):
            raise UserError(f"{type(self).__name__}: data_draw and data_seed_offset are read "
                            "per experiment: set them in the experiment's algorithm_options, "
                            "not in the algorithm's entry")

    @property
    def data(self) -> LinearClients:
        assert self.ctx.data is not None
        return self.ctx.data


class MomentumAlgorithm(LinearProblem[S]):
    """Base of PFL-TC, PDL-TC, the oracle and Standalone: personal models x_i [N, d] and
    momentums, one `MomentumState`, stepped by a pure round function of `rounds`."""

    state: MomentumState

    def setup(self) -> None:
        self.state = initial_state(self.num_clients, self.data.dimension, self.generator,
                                   scale=self.hyper.init_scale, start=self.hyper.start,
                                   cluster=self.ctx.cluster)

    def view(self) -> View:
        centers = None if self.state.centers is None else {"x": self.state.centers}
        return View(client_models={"x": self.state.params}, centers=centers,
                    assignment=self.state.assignment)

    def default_evaluators(self) -> list[str]:
        return ["optimum_error", "gradient_norm", "cluster_recovery"]
