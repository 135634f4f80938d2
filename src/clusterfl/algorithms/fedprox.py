"""FedProx (Li, Sahu, Zaheer, Sanjabi, Talwalkar & Smith 2020, "Federated Optimization in
Heterogeneous Networks", MLSys, Algorithm 2).

    for t = 0 .. T-1:
        server sends w^t to the selected clients
        each client k: w_k^{t+1} ~= argmin_w F_k(w) + mu/2 ||w - w^t||^2   (local SGD)
        server: w^{t+1} = sum_k (n_k / n) w_k^{t+1}        (FedAvg's average)
    every client is evaluated with w^t

The proximal term is the engine's `Prox` (weight 1, center w^t), so each local SGD step is
w <- w - lr * (grad F_k(w; batch) + mu (w - w^t)), through whichever rule the schedule names.

Readings:
- Local work: every client runs the schedule's local steps or epochs (the paper's
  gamma-inexact solver with no systems heterogeneity: no client drops out or stops early).
- The server's average: Algorithm 2 samples clients with probability p_k = n_k / n and takes
  the plain mean of their models, an unbiased estimate of sum_k p_k w_k; with the
  benchmark's full participation that is the n_k-weighted mean, FedAvg's aggregation.
- `mu` default 0.01 lies in the paper's candidate set {0.001, 0.01, 0.1, 1} (Sec. 5.3; the
  best mu there was chosen per dataset); `mu: 0` is FedAvg bit for bit.
"""

from dataclasses import dataclass

import torch

from clusterfl.algorithms.fedavg import GlobalModel
from clusterfl.core.options import require
from clusterfl.engine import Prox
from clusterfl.steps.aggregation import broadcast, weighted_average


@dataclass(frozen=True)
class FedProxHyper:
    mu: float = 0.01

    def validate(self, key: str) -> None:
        require(self.mu >= 0, f"{key}.mu", f"must be >= 0, got {self.mu}")


class FedProx(GlobalModel[FedProxHyper]):
    """FedAvg's setup and evaluation (every client uses w); the local objective adds the
    proximal term mu/2 ||w - w^t||^2."""
    family = "global"


    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = broadcast(self.global_model, len(clients))
        weight = torch.ones(len(clients), device=next(iter(start.values())).device)
        local = self.train_clients(start, clients, prox=Prox(self.hyper.mu, start, weight))
        self.global_model = weighted_average(local, self.train_sizes[clients])
