"""Ditto (Li, Hu, Beirami & Smith 2021, "Ditto: Fair and Robust Federated Learning Through
Personalization", ICML, Algorithm 1), read with the official code `litian96/ditto`
(`flearn/trainers_MTL/ditto.py`).

    for t = 0 .. T-1:
        server sends w^t to the selected clients
        each selected client k:
            w_k <- local SGD on F_k from w^t                 (the global update, FedAvg's)
            v_k <- v_k - lr * (grad F_k(v_k) + lam (v_k - w^t)), for its local steps
        server: w^{t+1} = average of the w_k
    client k is evaluated with its personal model v_k

Both updates go through the engine: the global one with the schedule's rule, the personal
one with the same rule and the proximal term lam/2 ||v - w^t||^2 (`Prox`, center w^t).

Readings:
- Batches: the personal steps walk the same batches as the global steps of the round (the
  official code draws one batch per local iteration and takes both steps on it).
  `personal_steps: s` gives the personal update s steps on batches of its own instead
  (Algorithm 1's "s local iterations").
- The server's average: `weighting: samples` (default) is FedAvg's n_k-weighted mean, as the
  global objective Ditto wraps is FedAvg's; `uniform` is the official code's plain mean of
  the selected clients' updates (`simple_average`).
- v_k starts at w^0; a client that is not selected keeps its v_k.
- `lam` default 1: the official Fashion-MNIST scripts' value (`run_fashion_*_lam1.sh`; the
  paper picks lam per dataset from {0.05, 0.1, 0.2, 0.5, 1, 2}).
"""

from dataclasses import dataclass

import torch

from clusterfl.algorithms.base import NeuralAlgorithm, Weighting, upload_weights
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine import Prox
from clusterfl.steps.aggregation import broadcast, gather, scatter, weighted_average


@dataclass(frozen=True)
class DittoHyper:
    lam: float = 1.0
    personal_steps: int | None = None  # None: the global update's batches
    weighting: Weighting = "samples"

    def validate(self, key: str) -> None:
        require(self.lam >= 0, f"{key}.lam", f"must be >= 0, got {self.lam}")
        require(self.personal_steps is None or self.personal_steps >= 1,
                f"{key}.personal_steps", f"must be >= 1 (or null), got {self.personal_steps}")


class Ditto(NeuralAlgorithm[DittoHyper]):
    family = "personalized"

    def setup(self) -> None:
        self.global_model = self.initial_model()
        self.personal = broadcast(self.global_model, self.num_clients)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = broadcast(self.global_model, len(clients))
        plan = self.local_plan(clients)
        local = self.train_clients(start, clients, plan=plan)
        steps = self.hyper.personal_steps
        personal_plan = plan if steps is None else self.local_plan(clients, local_steps=steps)
        weight = torch.ones(len(clients), device=next(iter(start.values())).device)
        personal = self.train_clients(gather(self.personal, clients), clients,
                                      prox=Prox(self.hyper.lam, start, weight),
                                      plan=personal_plan)
        self.personal = scatter(self.personal, clients, personal)
        weights = upload_weights(self.hyper.weighting, self.train_sizes, clients)
        self.global_model = weighted_average(local, weights)

    def client_models(self) -> Tensors:
        return self.personal
