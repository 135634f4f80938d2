"""pFedMe (Dinh, Tran & Nguyen 2020, "Personalized Federated Learning with Moreau Envelopes",
NeurIPS, Algorithm 1), read with the official code `CharlieDinh/pFedMe`.

    for t = 0 .. T-1:
        server sends w^t to the clients
        each client i, for r = 0 .. R-1, on a fresh mini-batch:
            theta_i ~= argmin_theta f_i(theta) + lam/2 ||theta - w_i||^2   (K inner steps)
            w_i <- w_i - eta * lam * (w_i - theta_i)
        server: w^{t+1} = (1 - beta) w^t + beta * mean of the selected w_i

The local step is the engine's `MoreauEnvelope` rule (inner steps with `personal_lr`).
Personalized models theta_i are what each client uses: they are evaluated on the client's own
test split (the official `evaluate_personalized_model`).

Switches for the official code's choices (paper's reading by default):
- `weighting`: the paper averages the S selected models uniformly ("uniform"); the official
  `persionalized_aggregate_parameters` weights by training samples ("samples").
- `train_all_clients`: the official server trains *every* client each round and only
  aggregates the sampled ones; the paper trains the sampled ones. Off by default; with
  every client selected (P1: N=40, no sampling) the two agree.
- `mu`: the official `pFedMeOptimizer` adds an L2 term mu*theta (0.001) to the inner step;
  Algorithm 1 has none, hence 0.
- `evaluated_model`: which model each client's "personalized" accuracy is measured on.
  "theta" (default): the personalized theta_i (Algorithm 1's output, the paper's reading).
  "local": the local model w_{i,R} after the round's local training, which is what the
  official `evaluate_personalized_model` really measures: `pFedMeOptimizer.step` returns
  `group['params']`, the model's own Parameter objects (fedoptimizer.py:57-65), so
  `UserpFedMe.train` keeps *aliases* in `persionalized_model_bar` (userpFedMe.py:50); the
  end of `train` copies the local w into those same parameters (userpFedMe.py:58,
  userbase.py:57-59), and `test_persionalized_model` (userbase.py:95-107), called after
  every client trained and before aggregation (serverpFedMe.py:54-66), copies the model
  into itself and evaluates w_{i,R}, not theta_i.
- "reporting the best round": the official plots report the best round's accuracy
  (plot_utils.py:72-77, the mean over runs of each run's max); every run here records the
  last and best round, and P1's report adds the mean of the last 10 rounds
  (`papers/p1/report/protocol.py`), so this is not a switch.

Every round the view's `extras` carry the other models for the `model_views` evaluator
(P1's reported-protocol table): "theta", "local_w" (w_{i,R}), "global" (the server's average
of the uploads, before the beta-mix) and "global_mixed" (w^{t+1}, after it); a client that
did not train this round keeps its last theta and w.
"""

from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar

import torch

from clusterfl.algorithms.base import NeuralAlgorithm, Weighting, upload_weights
from clusterfl.core.options import require
from clusterfl.core.types import Tensors, View
from clusterfl.engine import MoreauEnvelope
from clusterfl.steps.aggregation import broadcast, gather, mix, scatter, weighted_average
from clusterfl.training.loop import Family


@dataclass(frozen=True)
class PFedMeHyper:
    beta: float = 1.0
    lam: float = 15.0
    personal_lr: float = 0.09
    inner_steps: int = 5
    mu: float = 0.0
    weighting: Weighting = "uniform"
    train_all_clients: bool = False
    evaluated_model: Literal["theta", "local"] = "theta"

    def validate(self, key: str) -> None:
        require(self.beta > 0, f"{key}.beta", "must be > 0")
        require(self.lam > 0, f"{key}.lam", "must be > 0")
        require(self.personal_lr > 0, f"{key}.personal_lr", "must be > 0")
        require(self.inner_steps >= 1, f"{key}.inner_steps", "must be >= 1")
        require(self.mu >= 0, f"{key}.mu", "must be >= 0")


# pFedKM's hyperparameters extend pFedMe's
P = TypeVar("P", bound=PFedMeHyper)


class PFedMeBase(NeuralAlgorithm[P]):
    """pFedMe's rounds, generic in its hyperparameters: pFedMe and pFedKM name theirs."""

    family: ClassVar[Family] = "personalized"  # pFedKM overrides it

    def setup(self) -> None:
        self.global_model = self.initial_model()
        self.personalized = broadcast(self.global_model, self.num_clients)
        self.local = broadcast(self.global_model, self.num_clients)  # each client's last w
        self.average = dict(self.global_model)  # the server's average before the beta-mix

    def moreau_rule(self) -> MoreauEnvelope:
        h = self.hyper
        return MoreauEnvelope(lr=self.lr, personal_lr=h.personal_lr, lam=h.lam,
                              inner_steps=h.inner_steps, mu=h.mu)

    def local_round(self, start: Tensors, clients: torch.Tensor) -> Tensors:
        """R Moreau-envelope steps of `clients` from stacked `start`; keeps their theta_i.

        Returns the local models w_i (what is uploaded)."""
        rule = self.moreau_rule()
        local, state = self.train_clients_with_state(start, clients, rule)
        self.personalized = scatter(self.personalized, clients, rule.personalized(state))
        self.local = scatter(self.local, clients, local)
        return local

    def trainers(self, selected: torch.Tensor) -> torch.Tensor:
        return self.all_clients if self.hyper.train_all_clients else selected

    def round(self, round_: int, clients: torch.Tensor) -> None:
        trainers = self.trainers(clients)
        local = self.local_round(broadcast(self.global_model, len(trainers)), trainers)
        uploaded = gather(local, torch.searchsorted(trainers, clients))
        self.average = weighted_average(
            uploaded, upload_weights(self.hyper.weighting, self.train_sizes, clients))
        self.global_model = mix(self.global_model, self.average, self.hyper.beta)

    def client_models(self) -> Tensors:
        return self.local if self.hyper.evaluated_model == "local" else self.personalized

    def global_views(self) -> tuple[Tensors, Tensors]:
        """Each client's global model before and after the beta-mix, stacked `[N, ...]`."""
        return (broadcast(self.average, self.num_clients),
                broadcast(self.global_model, self.num_clients))

    def view(self) -> View:
        before, after = self.global_views()
        extras = {"theta": self.personalized, "local_w": self.local, "global": before,
                  "global_mixed": after}
        return View(client_models=self.client_models(), centers=self.centers(),
                    importance=self.importance(), assignment=self.assignment(), extras=extras)

    def default_evaluators(self) -> list[str]:
        return [*super().default_evaluators(), "model_views"]


class PFedMe(PFedMeBase[PFedMeHyper]):
    """pFedMe (the module's docstring)."""
