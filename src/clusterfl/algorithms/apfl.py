"""APFL (Deng, Kamani & Mahdavi 2020, "Adaptive Personalized Federated Learning",
arXiv:2003.13461, Algorithm 1 with the adaptive mixing weight of eq. 10), read beside the
authors' code `MLOPTPSU/FedTorch` (`comms/trainings/federated/apfl.py`).

    each client keeps a local model v_k and a mixing weight alpha_k in [0, 1]
    for t = 0 .. T-1:
        server sends w^t to the selected clients; each sets w_k <- w^t
        for each local step on a batch xi of client k:
            vbar_k  = alpha_k v_k + (1 - alpha_k) w_k
            w_k     <- w_k - lr * grad f_k(w_k; xi)
            v_k     <- v_k - lr * alpha_k * grad f_k(vbar_k; xi)     (= grad_v f_k(vbar_k))
            alpha_k <- Proj_[0,1](alpha_k - lr * <v_k - w_k, grad f_k(vbar_k; xi)>)   (eq. 10)
        server: w^{t+1} = mean of the selected w_k
    client k is evaluated with vbar_k = alpha_k v_k + (1 - alpha_k) w^{t+1}

The local step is `ApflStep`, a `LocalRule` on packed parameters: the engine trains w_k
(the model's own names), v_k (`personal.<name>`) and alpha_k (`alpha`, one number per client)
together, so everything a step needs travels through the engine's chunks and client sorting.

Readings:
- `alpha_mode: adaptive` (default) updates alpha_k at every local step by eq. 10 (the
  gradient of f_k(alpha v + (1 - alpha) w) in alpha, taken at the step's start), projected
  onto [0, 1]; `fixed` keeps alpha_k = `alpha` (Algorithm 1 as printed, with given weights).
  The authors' code (`--fed_adaptive_alpha`, off by default; `flow_utils.alpha_update`)
  updates alpha only at the first local step of each round, adds an L2 term 0.02 alpha to
  its gradient and clips to [0, 1]; we follow the paper's every-step update without it.
- The mixture is of parameters, vbar = alpha v + (1 - alpha) w, as in the paper; the
  authors' code mixes the two models' outputs (`inference_personal`), which for the DNN is a
  different model. Both steps of a local step use one batch (the paper's xi_i^t, as in the
  code), and all updates read the models at the step's start.
- `alpha` default 0.5: the authors' code default (`--fed_personal_alpha`); alpha_k starts
  there, v_k starts at w^0.
- The server's mean: `weighting: uniform` (default) is Algorithm 1's 1/K sum over the
  selected clients; `samples` weights by n_k as FedAvg does.
- Evaluation: w^{t+1} is the model a client holds when the round ends (the server's new
  model); the authors' code evaluates with its local w_k before the average.
- The steps are plain SGD (the paper's): `training.optimizer` must be sgd and
  `training.weight_decay` 0.
"""

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from clusterfl.algorithms.base import NeuralAlgorithm, Weighting, require_plain_sgd, upload_weights
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine import GradOracle, Prox
from clusterfl.engine.rules import bcast
from clusterfl.steps.aggregation import broadcast, gather, scatter, weighted_average
from clusterfl.steps.metrics import APFL_ALPHA

PERSONAL = "personal."  # v_k's names in the packed parameters
ALPHA = "alpha"  # alpha_k in the packed parameters, shape [C]


@dataclass(frozen=True)
class ApflHyper:
    alpha: float = 0.5
    alpha_mode: Literal["adaptive", "fixed"] = "adaptive"
    weighting: Weighting = "uniform"

    def validate(self, key: str) -> None:
        require(0.0 <= self.alpha <= 1.0, f"{key}.alpha", f"must be in [0, 1], got {self.alpha}")


def mixed_model(w: Tensors, v: Tensors, alpha: torch.Tensor) -> Tensors:
    """vbar = alpha v + (1 - alpha) w, per client (alpha `[C]`, models stacked `[C, ...]`)."""
    return {k: bcast(alpha, v[k]) * v[k] + bcast(1 - alpha, w[k]) * w[k] for k in w}


@dataclass(frozen=True)
class ApflStep:
    """One APFL local step on packed parameters (w under the model's names, v under
    `personal.<name>`, alpha under `alpha`)."""

    lr: float
    names: tuple[str, ...]  # the model's parameter names
    adaptive: bool = True
    capturable: ClassVar[bool] = False

    def init_state(self, params: Tensors) -> Tensors:
        return {}

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        if prox is not None:
            raise ValueError("ApflStep has no proximal term; pass prox=None")
        w = {k: params[k] for k in self.names}
        v = {k: params[PERSONAL + k] for k in self.names}
        alpha = params[ALPHA]
        g_mixed = oracle.grads(mixed_model(w, v, alpha))
        if self.adaptive:  # eq. 10, from the models at the step's start
            slope = sum(((v[k] - w[k]) * g_mixed[k]).flatten(1).sum(1) for k in self.names)
            new_alpha = (alpha - self.lr * slope).clamp_(0.0, 1.0)
        oracle.descend_(w, self.lr)  # w <- w - lr grad f(w), fused
        step = -self.lr * alpha
        for k in self.names:
            v[k].addcmul_(g_mixed[k], bcast(step, v[k]))
        if self.adaptive:
            alpha.copy_(new_alpha)


class Apfl(NeuralAlgorithm[ApflHyper]):
    family = "personalized"

    def setup(self) -> None:
        require_plain_sgd(self.schedule, "apfl")
        self.global_model = self.initial_model()
        self.personal = broadcast(self.global_model, self.num_clients)
        device = next(iter(self.global_model.values())).device
        self.alpha = torch.full((self.num_clients,), self.hyper.alpha, device=device)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        names = tuple(self.global_model)
        packed = broadcast(self.global_model, len(clients))
        packed |= {PERSONAL + k: v for k, v in gather(self.personal, clients).items()}
        packed[ALPHA] = self.alpha[clients]
        rule = ApflStep(self.lr, names, self.hyper.alpha_mode == "adaptive")
        out = self.train_clients(packed, clients, rule=rule)
        self.personal = scatter(self.personal, clients, {k: out[PERSONAL + k] for k in names})
        self.alpha = self.alpha.clone()
        self.alpha[clients] = out[ALPHA]
        local = {k: out[k] for k in names}
        weights = upload_weights(self.hyper.weighting, self.train_sizes, clients)
        self.global_model = weighted_average(local, weights)

    def client_models(self) -> Tensors:
        return mixed_model(broadcast(self.global_model, self.num_clients), self.personal,
                           self.alpha)

    def round_metrics(self) -> dict[str, float]:
        """The clients' mean mixing weight (moves only with `alpha_mode: adaptive`)."""
        return {APFL_ALPHA.name: float(self.alpha.mean())}
