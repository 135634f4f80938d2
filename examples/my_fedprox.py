"""A user's own algorithm, outside `src/`: FedProx (Li, Sahu, Zaheer, Sanjabi, Talwalkar &
Smith 2020, "Federated Optimization in Heterogeneous Networks", Algorithm 2), written the way
a researcher adds a method to rank it on the benchmark (README "Your method on the
leaderboard").

    for t = 0 .. T-1:
        the selected clients k start from the global model w^t and minimise, by local SGD,
            h_k(w) = F_k(w) + mu/2 ||w - w^t||^2
        w^{t+1} = sum_k (n_k / n) w_k         (over the selected clients)
    every client is evaluated with the global model

This file is a plugin: a suite names it under `plugins:` (suites/my_method/params.yaml), which
runs it before the suite is read, so the `ALGORITHMS.add` below makes the method
`my_fedprox` available to the suite's `algorithms:` entries. Client work goes through the
engine (`train_clients`), whose proximal term is the engine's `Prox`.
"""

from dataclasses import dataclass

import torch

from clusterfl.steps.aggregation import broadcast, weighted_average
from clusterfl.algorithms import ALGORITHMS, NeuralAlgorithm
from clusterfl.engine import Prox
from clusterfl.core.options import require
from clusterfl.core.types import Tensors


@dataclass(frozen=True)
class MyFedProxHyper:
    mu: float = 0.01  # the proximal weight; the paper's grid is {0.001, 0.01, 0.1, 1}

    def validate(self, key: str) -> None:
        require(self.mu >= 0, f"{key}.mu", f"must be >= 0, got {self.mu}")


# the type argument is the hyperparameter class params are parsed into (and types self.hyper)
class MyFedProx(NeuralAlgorithm[MyFedProxHyper]):
    family = "global"  # the leaderboard's family column: one model for every client

    def setup(self) -> None:
        self.global_model = self.initial_model()

    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = broadcast(self.global_model, len(clients))
        like = next(iter(start.values()))  # the proximal weight per client: 1 for FedProx
        prox = Prox(self.hyper.mu, start, torch.ones(len(clients), dtype=like.dtype,
                                                     device=like.device))
        local = self.train_clients(start, clients, prox=prox)
        self.global_model = weighted_average(local, self.train_sizes[clients])

    def client_models(self) -> Tensors:
        return broadcast(self.global_model, self.num_clients)


ALGORITHMS.add("my_fedprox")(MyFedProx)
