"""The round loop every algorithm shares, and the training schedule it follows.

A round is: select clients -> `round()` (the algorithm's local work and server step) ->
evaluate the model each client would use -> callbacks. Algorithms override `setup`, `round`
and `client_models` (and optionally `select_clients`, `local_rule`, `round_arrays`,
`round_metrics`, `evaluate`); client
work always goes through `train_clients`, i.e. through the one local-training engine.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from clusterfl.callbacks import Callback, CallbackList
from clusterfl.engine import Adam, LocalEngine, Prox, Sgd, make_plan
from clusterfl.engine.base import Params
from clusterfl.history import RunHistory
from clusterfl.models import InitScheme, init_params
from clusterfl.options import require


@dataclass(frozen=True)
class Schedule:
    """How clients train: rounds T, local steps R (or epochs), batch, optimizer, lr."""

    lr: float
    rounds: int = 100
    local_steps: int | None = None
    epochs: int | None = None
    batch_size: int = 20
    optimizer: Literal["sgd", "adam"] = "sgd"
    weight_decay: float = 0.0
    clients_per_round: int | None = None  # None: every client trains every round
    init: InitScheme = "pytorch"  # model initialisation (models.init_params)

    def validate(self, key: str) -> None:
        require(self.rounds >= 1, f"{key}.rounds", f"must be >= 1, got {self.rounds}")
        require(self.lr > 0, f"{key}.lr", f"must be > 0, got {self.lr}")
        require(self.batch_size >= 1, f"{key}.batch_size", "must be >= 1")
        require(
            (self.local_steps is None) != (self.epochs is None),
            key, "set exactly one of local_steps and epochs",
        )
        for name in ("local_steps", "epochs", "clients_per_round"):
            value = getattr(self, name)
            require(value is None or value >= 1, f"{key}.{name}", f"must be >= 1, got {value}")


@dataclass
class RunContext:
    """Everything an algorithm needs besides its own hyperparameters."""

    model: nn.Module
    engine: LocalEngine
    schedule: Schedule
    seed: int
    true_cluster: np.ndarray | None = None
    # Soft-clustering ground truth and held-out sets (FedSoft's P2 protocol, see soft_eval.py):
    true_mixture: np.ndarray | None = None  # (N, D): client k's true share of distribution d
    holdout: LocalEngine | None = None  # its clients = held-out test sets, one per distribution


class FederatedAlgorithm(ABC):
    """Owns the round loop; subclasses fill in the hooks."""

    Hyper: ClassVar[type]

    def __init__(self, hyper: Any, ctx: RunContext) -> None:
        self.hyper = hyper
        self.ctx = ctx
        self.engine = ctx.engine
        self.schedule = ctx.schedule
        self.rng = np.random.default_rng(ctx.seed)
        self.generator = torch.Generator().manual_seed(ctx.seed)
        self.num_clients = self.engine.data.num_clients
        self.all_clients = torch.arange(self.num_clients)
        self.train_sizes = self.engine.data.train_n

    # -- hooks ------------------------------------------------------------------------------
    @abstractmethod
    def setup(self) -> None:
        """Create the initial server/client state."""

    @abstractmethod
    def round(self, round_: int, clients: torch.Tensor) -> None:
        """One round of local work by `clients` and the server step."""

    @abstractmethod
    def client_models(self) -> Params:
        """Stacked `[N, ...]`: the model each client would use now (what is evaluated)."""

    def round_arrays(self) -> dict[str, list[Any]]:
        """Per-round arrays to keep in the history (e.g. each client's cluster)."""
        return {}

    def round_metrics(self) -> dict[str, float]:
        """Extra per-round scalars for the record (e.g. cluster recovery, k-means time)."""
        return {}

    def select_clients(self, round_: int) -> torch.Tensor:
        k = self.schedule.clients_per_round
        if k is None or k >= self.num_clients:
            return self.all_clients
        return torch.from_numpy(np.sort(self.rng.choice(self.num_clients, k, replace=False)))

    def local_rule(self) -> Any:
        s = self.schedule
        if s.optimizer == "adam":
            return Adam(s.lr, weight_decay=s.weight_decay)
        return Sgd(s.lr, weight_decay=s.weight_decay)

    # -- shared machinery ----------------------------------------------------------------------
    def initial_model(self) -> Params:
        return init_params(self.ctx.model, self.generator, self.schedule.init)

    def local_plan(self, clients: torch.Tensor, local_steps: int | None = None,
                   batch_size: int | None = None) -> Any:
        """The batches `clients` train on this round (the schedule's unless overridden)."""
        s = self.schedule
        steps, epochs = (local_steps, None) if local_steps is not None else (s.local_steps,
                                                                           s.epochs)
        return make_plan(self.train_sizes[clients].cpu().numpy(), batch_size or s.batch_size,
                         self.rng, local_steps=steps, epochs=epochs)

    def train_clients(
        self, start: Params, clients: torch.Tensor, prox: Prox | None = None, rule: Any = None,
        plan: Any = None,
    ) -> Params:
        """Local training of `clients` from stacked `start`, through the engine."""
        plan = plan if plan is not None else self.local_plan(clients)
        return self.engine.train(start, clients, rule or self.local_rule(), plan, prox)

    def train_clients_with_state(
        self, start: Params, clients: torch.Tensor, rule: Any
    ) -> tuple[Params, Params]:
        """As `train_clients`, plus the rule's final per-client state (pFedMe's theta)."""
        return self.engine.train_with_state(start, clients, rule, self.local_plan(clients))

    def evaluate(self) -> dict[str, float]:
        """Sample-weighted test accuracy/loss and train loss of every client's model."""
        models = self.client_models()
        test_loss, test_correct = self.engine.evaluate(models, self.all_clients, "test")
        train_loss, train_correct = self.engine.evaluate(models, self.all_clients, "train")
        n_test = self.engine.data.test_n.sum().item()
        n_train = self.engine.data.train_n.sum().item()
        if self.engine.data.is_regression:  # squared-error loss: the loss is the MSE
            return {"test_mse": test_loss.sum().item() / n_test,
                    "train_mse": train_loss.sum().item() / n_train}
        return {
            "test_acc": test_correct.sum().item() / n_test,
            "test_loss": test_loss.sum().item() / n_test,
            "train_acc": train_correct.sum().item() / n_train,
            "train_loss": train_loss.sum().item() / n_train,
        }

    def run(self, callbacks: list[Callback] | None = None) -> RunHistory:
        events = CallbackList(callbacks)
        history = RunHistory()
        self.setup()
        events.on_run_start({"clients": self.num_clients, "rounds": self.schedule.rounds})
        for round_ in range(1, self.schedule.rounds + 1):
            self.round(round_, self.select_clients(round_))
            metrics = {"round": round_, **self.evaluate(), **self.round_metrics()}
            history.append(metrics, self.round_arrays())
            events.on_round_end(round_, metrics)
        events.on_run_end(history.summary())
        return history
