"""The round loop every algorithm shares, with no model, engine or learning rate in it.

A round is: select clients -> `round()` (the algorithm's local work and server step) ->
every evaluator reads a `View` of the algorithm -> the algorithm's own diagnostics ->
callbacks. Neural algorithms (an engine, a schedule, a model) build on this in
`clusterfl.algorithms.base.NeuralAlgorithm`; a factorization or k-means algorithm subclasses
`FederatedAlgorithm` directly and fills `view()` with what it has.

What the loop exchanges (`RunContext`, `View`, `Evaluator`, `SeedInputs`) is defined in
`clusterfl.core.types`, so evaluators never import the loop; the loop uses the evaluator registry
only to build an algorithm's `default_evaluators()` by name.
"""

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args

import numpy as np
import torch

from clusterfl.core.types import Evaluator, GroundTruth, RunContext, SeedInputs, View
from clusterfl.evaluators import build_evaluators
from clusterfl.run.checkpoints import (
    Interrupted,
    SeedCheckpoint,
    StopRequest,
    global_rng_state,
    set_global_rng_state,
    stop_on_signals,
)
from clusterfl.steps.metrics import ROUND_SECONDS
from clusterfl.training.callbacks import Callback, CallbackList
from clusterfl.training.history import RunHistory

# What kind of model each client ends with, as the benchmark's leaderboard groups methods
# (docs/algorithms.md): one global model, its own local one, a personalized one, or its
# cluster's (or mixture's) model.
# An algorithm's hyperparameter dataclass (its `Hyper`), the type of `self.hyper`.
H = TypeVar("H")

Family = Literal["global", "local", "personalized", "clustered", "other"]


class FederatedAlgorithm(ABC, Generic[H]):
    """Owns the round loop; subclasses fill in the hooks. `H` is the algorithm's
    hyperparameter dataclass (`Hyper`), so `self.hyper.<field>` is checked by mypy."""

    # the hyperparameter dataclass params are parsed into: the type argument a class names
    # (`class Ifca(OneModelPerCluster[IfcaHyper])`), inherited by its subclasses; a base that
    # others extend with their own stays generic (`class FedAvgBase(GlobalModel[A])`)
    Hyper: ClassVar[type]
    # every general method declares its own; a paper's own method may leave "other"
    family: ClassVar[Family] = "other"
    # Attributes set once from the hyperparameters and the context, not by the rounds: left
    # out of `state_dict` (a subclass adds its own, e.g. a data matrix `setup` rebuilds).
    transient: ClassVar[tuple[str, ...]] = ("hyper", "ctx")

    def __init__(self, hyper: H, ctx: RunContext) -> None:
        self.hyper: H = hyper
        self.ctx = ctx
        self.rng = np.random.default_rng(ctx.seed)
        self.generator = torch.Generator().manual_seed(ctx.seed)
        self.num_clients = ctx.num_clients
        self.all_clients = torch.arange(self.num_clients)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "Hyper" in cls.__dict__:  # one way to declare it, the one that also types self.hyper
            raise TypeError(f"{cls.__qualname__}: name the hyperparameter dataclass as the "
                            f"base's type argument (class {cls.__name__}(Base[Hyper])), not "
                            "as a `Hyper` attribute")
        for base in cls.__dict__.get("__orig_bases__", ()):
            args = get_args(base)
            if args and isinstance(args[0], type):
                cls.Hyper = args[0]

    @classmethod
    def make_context(cls, run: SeedInputs) -> RunContext:
        """The context for one seed: the schedule's rounds and participation and the
        partition's ground truth. Algorithms that need more
        (a model and an engine, their clients' data matrices) override this."""
        schedule, partition = run.experiment.schedule, run.partition
        return RunContext(
            seed=run.seed, num_clients=partition.num_clients, rounds=schedule.rounds,
            clients_per_round=schedule.clients_per_round,
            truth=GroundTruth(cluster=partition.cluster, mixture=partition.mixture),
        )

    # -- hooks ------------------------------------------------------------------------------
    @abstractmethod
    def setup(self) -> None:
        """Create the initial server/client state."""

    @abstractmethod
    def round(self, round_: int, clients: torch.Tensor) -> None:
        """One round of local work by `clients` and the server step."""

    @abstractmethod
    def view(self) -> View:
        """What the evaluators read after this round."""

    def round_metrics(self) -> dict[str, float]:
        """The algorithm's own per-round diagnostics (e.g. k-means time, numbers uploaded)."""
        return {}

    def round_arrays(self) -> dict[str, list[Any]]:
        """The algorithm's own per-round arrays to keep in the history."""
        return {}

    def default_evaluators(self) -> list[str]:
        """Evaluator names (`clusterfl.evaluators`) for an experiment that names none."""
        return ["cluster_recovery"]

    def select_clients(self, round_: int) -> torch.Tensor:
        k = self.ctx.clients_per_round
        if k is None or k >= self.num_clients:
            return self.all_clients
        return torch.from_numpy(np.sort(self.rng.choice(self.num_clients, k, replace=False)))

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything the rounds change: every attribute but the `transient` ones (models,
        centers, assignments, optimizer state, `rng`, `generator`, ...), as they are."""
        return {name: value for name, value in vars(self).items()
                if name not in self.transient}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back `state_dict()`; generators are restored in place, so whatever holds
        them keeps drawing from the restored stream."""
        for name, value in state.items():
            current = getattr(self, name, None)
            if isinstance(current, torch.Generator) and isinstance(value, torch.Generator):
                current.set_state(value.get_state())
            elif (isinstance(current, np.random.Generator)
                  and isinstance(value, np.random.Generator)):
                current.bit_generator.state = value.bit_generator.state
            else:
                setattr(self, name, value)

    def checkpoint_state(self, round_: int, history: RunHistory,
                         evaluators: Sequence[Evaluator]) -> dict[str, Any]:
        """The loop after `round_`: the algorithm, the evaluators that keep state across
        rounds (a `state_dict` method), the global generators and the history so far."""
        return {"round": round_, "algorithm": self.state_dict(),
                "evaluators": [e.state_dict() if hasattr(e, "state_dict") else None
                               for e in evaluators],
                "global_rng": global_rng_state(), "history": history}

    def restore(self, state: dict[str, Any], evaluators: Sequence[Evaluator]) -> RunHistory:
        """Undo `checkpoint_state`; returns the history up to its round."""
        self.load_state_dict(state["algorithm"])
        for evaluator, saved in zip(evaluators, state["evaluators"], strict=True):
            if saved is not None:
                evaluator.load_state_dict(saved)  # type: ignore[attr-defined]
        set_global_rng_state(state["global_rng"])
        history: RunHistory = state["history"]
        return history

    # -- the loop -----------------------------------------------------------------------------
    def run(self, evaluators: Sequence[Evaluator] | None = None,
            callbacks: list[Callback] | None = None,
            checkpoint: SeedCheckpoint | None = None) -> RunHistory:
        """Setup, then `rounds` rounds; `evaluators` default to `default_evaluators()`.

        With a `checkpoint`, the run resumes after its last checkpointed round (the restored
        rounds are replayed to the callbacks), checkpoints every `checkpoint.every` rounds,
        and on SIGTERM/SIGINT finishes the round, checkpoints and raises `Interrupted`."""
        if evaluators is None:
            evaluators = build_evaluators(self.default_evaluators(), self.ctx)
        events = CallbackList(callbacks)
        primary = next((e.primary for e in evaluators if e.primary is not None), None)
        history = RunHistory(primary=primary)
        self.setup()
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is not None:
            history = self.restore(saved, evaluators)
        events.on_run_start({"clients": self.num_clients, "rounds": self.ctx.rounds,
                             "primary": primary, "resumed_at": len(history.records)})
        for record in history.records:
            events.on_round_end(int(record["round"]), record)
        signals = stop_on_signals(checkpoint.name) if checkpoint else nullcontext(StopRequest())
        with signals as stop:
            for round_ in range(len(history.records) + 1, self.ctx.rounds + 1):
                selected = self.select_clients(round_)
                start = time.perf_counter()
                self.round(round_, selected)
                seconds = time.perf_counter() - start
                view = self.view()
                metrics: dict[str, float] = {"round": round_}
                arrays: dict[str, list[Any]] = {}
                for evaluator in evaluators:
                    metrics |= evaluator.evaluate(view)
                    arrays |= evaluator.arrays(view)
                metrics |= self.round_metrics()
                metrics[ROUND_SECONDS.name] = seconds  # a timing: history.json never has it
                arrays |= self.round_arrays()
                history.append(metrics, arrays)
                if checkpoint is not None and checkpoint.due(round_):
                    checkpoint.save(self.checkpoint_state(round_, history, evaluators))
                events.on_round_end(round_, metrics)
                if checkpoint is not None and stop.signum is not None:
                    checkpoint.save(self.checkpoint_state(round_, history, evaluators))
                    raise Interrupted(
                        f"{checkpoint.name}: stopped by {stop.name} after round {round_} of "
                        f"{self.ctx.rounds}; checkpoint in {checkpoint.directory}; run the "
                        "same command again to resume", 128 + stop.signum)
        events.on_run_end(history.summary())
        return history
