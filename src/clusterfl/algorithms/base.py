"""Neural algorithms: the model-free round loop (`clusterfl.training.loop`) plus a model, the one
local-training engine and a training schedule.

Algorithms override `setup`, `round` and `client_models` (and optionally `centers`,
`importance`, `assignment` for the evaluators, `select_clients`, `local_rule`,
`round_metrics`, `round_arrays`); client work always goes through `train_clients`, i.e.
through the one local-training engine.
"""

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.core.types import (
    Dataset,
    ExperimentSpec,
    GroundTruth,
    Partition,
    RunContext,
    SeedInputs,
    Tensors,
    View,
)
from clusterfl.engine import (
    ENGINES,
    Adam,
    BatchPlan,
    ClientData,
    LocalEngine,
    LocalRule,
    Prox,
    Sgd,
    make_plan,
)
from clusterfl.engine.kernels import linear_relu_layers
from clusterfl.engine.losses import LossName
from clusterfl.engine.vectorized import Precision
from clusterfl.partition import views
from clusterfl.steps.aggregation import gather
from clusterfl.training.loop import FederatedAlgorithm, H
from clusterfl.training.models import InitScheme, build_model, init_params

# A bound on rounds, local steps and epochs: the papers' longest run is 400 rounds; a million
# rounds of the smallest cell (~5 ms each) is already ~1.5 h, and 10^12 would never end.
MAX_STEPS = 1_000_000


@dataclass(frozen=True)
class Schedule:
    """How a run proceeds: rounds T and participation (every algorithm), and for neural
    algorithms local steps R (or epochs), batch, optimizer, lr and initialisation."""

    rounds: int = 100
    clients_per_round: int | None = None  # None: every client trains every round
    lr: float | None = None
    local_steps: int | None = None
    epochs: int | None = None
    batch_size: int = 20
    optimizer: Literal["sgd", "adam"] = "sgd"
    weight_decay: float = 0.0
    init: InitScheme = "pytorch"  # model initialisation (models.init_params)
    # the loss trained and evaluated (engine/losses.py); None: by the labels' dtype
    # (cross-entropy for classes, squared error for regression targets)
    loss: LossName | None = None
    # the engine's arithmetic (docs/engine.md): fp32; tf32 (CUDA's TF32 matmuls; the CPU
    # computes fp32); bf16 (bf16 GEMMs, float32 weights; Linear-ReLU models)
    precision: Precision = "fp32"

    def validate(self, key: str) -> None:
        require(self.rounds >= 1, f"{key}.rounds", f"must be >= 1, got {self.rounds}")
        require(self.lr is None or self.lr > 0, f"{key}.lr", f"must be > 0, got {self.lr}")
        require(self.batch_size >= 1, f"{key}.batch_size", "must be >= 1")
        require(self.local_steps is None or self.epochs is None, key,
                "set at most one of local_steps and epochs")
        for name in ("local_steps", "epochs", "clients_per_round"):
            value = getattr(self, name)
            require(value is None or value >= 1, f"{key}.{name}", f"must be >= 1, got {value}")
        for name in ("rounds", "local_steps", "epochs"):
            value = getattr(self, name)
            require(value is None or value <= MAX_STEPS, f"{key}.{name}",
                    f"must be <= {MAX_STEPS:,} (the papers' longest runs are 400 rounds), "
                    f"got {value}")

    def validate_neural(self, key: str) -> None:
        """What training a model needs on top: a learning rate and a local-work length."""
        require(self.lr is not None, f"{key}.lr", "required to train a model")
        require(self.local_steps is not None or self.epochs is not None, key,
                "set exactly one of local_steps and epochs")

    def check_loss(self, regression: bool, key: str) -> None:
        """A named loss needs class labels (`key`: the training block)."""
        require(self.loss is None or not regression, f"{key}.loss",
                f"{self.loss!r} needs class labels; regression data trains with the squared "
                "error (leave loss unset)")


def build_engine(name: str, model: nn.Module, data: ClientData, schedule: Schedule,
                 key: str) -> LocalEngine:
    """Engine `name` over `data` with the schedule's loss and precision (`key`: the training
    block, named in errors)."""
    if schedule.precision == "fp32":
        return ENGINES[name](model, data, loss=schedule.loss)
    if name != "vectorized":
        raise UserError(f"{key}.precision: {schedule.precision!r} needs the vectorized engine; "
                        f"the {name} engine computes fp32 (leave precision unset)")
    if schedule.precision == "bf16" and linear_relu_layers(model) is None:
        raise UserError(f"{key}.precision: 'bf16' runs on Linear-ReLU models only (the bmm "
                        "kernel); use fp32 or tf32 for this model")
    return ENGINES[name](model, data, loss=schedule.loss, precision=schedule.precision)


def model_schedule(experiment: ExperimentSpec) -> Schedule:
    """`experiment.schedule` as the `Schedule` a model trains with. `SeedInputs` shows the
    loop only rounds and participation (`ScheduleSpec`); a suite's experiments always hold a
    `Schedule` (`clusterfl.run.config`), and training a model needs all of it."""
    schedule = experiment.schedule
    if not isinstance(schedule, Schedule):
        raise TypeError(f"experiments.{experiment.name}: a model trains with a Schedule, got "
                        f"{type(schedule).__name__}")
    return schedule


def client_data(dataset: Dataset, partition: Partition, device: str = "cpu") -> ClientData:
    """Lay out each client's train/test samples (views applied) for the engine."""
    clients = range(partition.num_clients)
    return ClientData.from_lists(
        [views.client_data(dataset, partition, k, "train") for k in clients],
        [views.client_data(dataset, partition, k, "test") for k in clients],
        device=device,
    )


def holdout_data(dataset: Dataset, partition: Partition, device: str = "cpu"
                 ) -> ClientData | None:
    """The partition's held-out test sets, one per distribution, laid out as the `test`
    split of one "client" each (their `train` split is empty); None without hold-outs."""
    if not partition.holdout:
        return None
    sets = [views.holdout_data(dataset, partition, s) for s in range(len(partition.holdout))]
    empty = [(x[:0], y[:0]) for x, y in sets]
    return ClientData.from_lists(empty, sets, device=device)


@dataclass
class NeuralContext(RunContext):
    """A run context with a model to train, the engine over the clients' data, the
    schedule, and (P2's protocol) an engine over the held-out set of each distribution."""

    model: nn.Module | None = None
    engine: LocalEngine | None = None
    schedule: Schedule | None = None
    holdout: LocalEngine | None = None

    @classmethod
    def build(cls, model: nn.Module, engine: LocalEngine, schedule: Schedule, seed: int,
              true_cluster: Any = None, true_mixture: Any = None,
              holdout: LocalEngine | None = None) -> "NeuralContext":
        """A context over `engine`'s clients, with the schedule's rounds and participation."""
        return cls(seed=seed, num_clients=engine.data.num_clients, rounds=schedule.rounds,
                   clients_per_round=schedule.clients_per_round,
                   truth=GroundTruth(cluster=true_cluster, mixture=true_mixture),
                   model=model, engine=engine, schedule=schedule, holdout=holdout)


class NeuralAlgorithm(FederatedAlgorithm[H]):
    """The round loop with a model: client work goes through the engine."""

    ctx: NeuralContext
    transient = (*FederatedAlgorithm.transient, "engine", "schedule")

    def __init__(self, hyper: H, ctx: NeuralContext) -> None:
        super().__init__(hyper, ctx)
        assert ctx.engine is not None and ctx.schedule is not None and ctx.model is not None
        self.engine = ctx.engine
        self.schedule = ctx.schedule
        self.train_sizes = self.engine.data.train_n

    @classmethod
    def make_context(cls, run: SeedInputs) -> NeuralContext:
        """Build the model, the engine over the clients' data and the hold-out engine for
        one seed of a cell."""
        experiment, dataset, partition = run.experiment, run.dataset, run.partition
        key = f"experiments.{experiment.name}"
        if experiment.model is None:
            raise UserError(f"{key}.model: required by neural algorithms")
        schedule = model_schedule(experiment)
        schedule.validate_neural(f"{key}.training")
        schedule.check_loss(dataset.is_regression, f"{key}.training")
        model = build_model(experiment.model, dataset.feature_shape, dataset.num_classes,
                            experiment.model_options, key=f"{key}.model").to(run.device)
        training = f"{key}.training"
        holdout = holdout_data(dataset, partition, run.device)
        return NeuralContext.build(
            model, build_engine(run.engine, model, client_data(dataset, partition, run.device),
                                schedule, training),
            schedule, run.seed, partition.cluster, partition.mixture,
            None if holdout is None else build_engine(run.engine, model, holdout, schedule,
                                                      training))

    def default_evaluators(self) -> list[str]:
        """P2's protocol where the data has held-out sets or true mixtures, else every
        client's model on its own samples; cluster recovery where there are clusters."""
        soft = self.ctx.holdout is not None or self.ctx.truth.mixture is not None
        return ["holdout" if soft else "clients", "cluster_recovery"]

    # -- what evaluators see ------------------------------------------------------------------
    def client_models(self) -> Tensors:
        """Stacked `[N, ...]`: the model each client would use now (what is evaluated)."""
        raise NotImplementedError

    def centers(self) -> Tensors | None:
        return None

    def importance(self) -> torch.Tensor | None:
        return None

    def assignment(self) -> torch.Tensor | None:
        return None

    def view(self) -> View:
        return View(client_models=self.client_models(), centers=self.centers(),
                    importance=self.importance(), assignment=self.assignment())

    # -- shared machinery ---------------------------------------------------------------------
    @property
    def lr(self) -> float:
        """The schedule's learning rate (`validate_neural` refused a neural cell without one)."""
        assert self.schedule.lr is not None
        return self.schedule.lr

    def local_rule(self) -> Sgd | Adam:
        s = self.schedule
        if s.optimizer == "adam":
            return Adam(self.lr, weight_decay=s.weight_decay)
        return Sgd(self.lr, weight_decay=s.weight_decay)

    def initial_model(self) -> Tensors:
        assert self.ctx.model is not None  # checked in __init__
        return init_params(self.ctx.model, self.generator, self.schedule.init)

    def local_plan(self, clients: torch.Tensor, local_steps: int | None = None,
                   batch_size: int | None = None) -> BatchPlan:
        """The batches `clients` train on this round (the schedule's unless overridden)."""
        s = self.schedule
        steps, epochs = (local_steps, None) if local_steps is not None else (s.local_steps,
                                                                           s.epochs)
        return make_plan(self.train_sizes[clients].cpu().numpy(), batch_size or s.batch_size,
                         self.rng, local_steps=steps, epochs=epochs)

    def train_clients(
        self, start: Tensors, clients: torch.Tensor, prox: Prox | None = None,
        rule: LocalRule | None = None, plan: BatchPlan | None = None,
    ) -> Tensors:
        """Local training of `clients` from stacked `start`, through the engine."""
        plan = plan if plan is not None else self.local_plan(clients)
        return self.engine.train(start, clients, rule or self.local_rule(), plan, prox)

    def train_clients_with_state(
        self, start: Tensors, clients: torch.Tensor, rule: LocalRule
    ) -> tuple[Tensors, Tensors]:
        """As `train_clients`, plus the rule's final per-client state (pFedMe's theta)."""
        return self.engine.train_with_state(start, clients, rule, self.local_plan(clients))


class OneModelPerCluster(NeuralAlgorithm[H]):
    """A neural algorithm with one model per cluster (`cluster_models`, stacked along dim 0)
    and one cluster per client (`clusters`): IFCA and CFL. A client uses its cluster's model."""

    cluster_models: Tensors
    clusters: torch.Tensor

    def num_cluster_models(self) -> int:
        return len(next(iter(self.cluster_models.values())))

    def client_models(self) -> Tensors:
        return gather(self.cluster_models, self.clusters)

    def centers(self) -> Tensors:
        return self.cluster_models

    def assignment(self) -> torch.Tensor:
        return self.clusters

    def importance(self) -> torch.Tensor:
        """One-hot weights on each client's cluster (for FedSoft's evaluation protocol)."""
        return torch.nn.functional.one_hot(self.clusters, self.num_cluster_models()).double()


# -- what several algorithms' servers share -------------------------------------------------
Weighting = Literal["samples", "uniform"]


def upload_weights(weighting: Weighting, train_sizes: torch.Tensor, clients: torch.Tensor
                   ) -> torch.Tensor:
    """Each selected client's weight in the server's mean: its number of training samples
    (FedAvg's n_k / n) or 1 (the plain mean some papers' algorithms print)."""
    if weighting == "uniform":
        return torch.ones(len(clients))
    return train_sizes[clients]


def require_plain_sgd(schedule: Any, method: str) -> None:
    """A method whose own rule takes the paper's plain SGD steps refuses Adam and weight
    decay (one line naming the key) rather than ignoring them."""
    require(schedule.optimizer == "sgd", "training.optimizer",
            f"{method} takes plain SGD steps (the paper's); got {schedule.optimizer!r}")
    require(schedule.weight_decay == 0, "training.weight_decay",
            f"{method} takes plain SGD steps (the paper's); got {schedule.weight_decay}")
