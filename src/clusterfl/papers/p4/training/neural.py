"""PFL-TC / PDL-TC on neural models (P4, Algorithms 2-3, carried beyond the paper's linear
Sec. 4 onto a real clustered classification task: the issue's Fashion-MNIST rotations).

What the neural versions share: every client keeps a personal model x_i and a momentum m_i of
its flattened gradient; the client side runs through the one local-training engine, the
server side is P4's pure functions (`rounds.pfl_tc_server`, `rounds.pdl_tc_estimates`) and the
momentum update is `momentum.update_momentum`.

    each round t, every client i:
        g~_i  = Option 1: the gradient of i's mean minibatch loss at x_{i,t-1}
                Option 2: the sum of the m minibatch gradients of m local SGD steps from
                          x_{i,t-1} at lr eta, i.e. (x_{i,t-1} - y^m) / eta
        m_i  <- alpha g~_i + (1 - alpha) m_i          (alpha = 1 in the first round)
    server: v_{c(i)} from the momentums (PFL-TC: K centers; PDL-TC: one estimate per client)
    every client i: x_i <- x_i - eta v_{c(i)}

Readings (beyond those of the linear version in `momentum`, `threshold` and `rounds`):
- A client's model starts (`start`) "shared" (default): one draw of the experiment's
  initialisation (`training.init`), the same for every client, as FedAvg, IFCA's clusters and
  the oracle start; then clients of one cluster receive the same steps and stay one model.
  "personal": one independent draw per client, Sec. 4's x_{i,0} ~ N(0, I) per client.
- The minibatch: the engine's plan of the experiment's `batch_size` (without replacement
  within an epoch, as every neural algorithm here draws batches), one step for Option 1,
  `local_steps` (or `epochs`) steps for Option 2. The loss is the engine's (cross-entropy for
  classes) plus `weight_decay` / 2 ||w||^2 when the schedule sets one.
- eta: the schedule's `lr`, for the local steps of Option 2 and for the server step alike
  (Algorithm 2 has one eta).
- The gradient is flattened in parameter-name order (`clustering.flatten`) and kept, with the
  momentum, in float64: the server's distances over ~1e5 coordinates are computed in
  float64; the step is applied in the model's dtype.
- Every client takes part in every round (Algorithms 2-3 have no client sampling);
  `clients_per_round` must be unset.
- Test time: client i uses its personal model x_i (the `clients` evaluator: each model on its
  own test split).
"""

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from clusterfl.algorithms.base import NeuralAlgorithm, NeuralContext
from clusterfl.core.options import require
from clusterfl.core.types import SeedInputs, Tensors
from clusterfl.engine.base import Prox
from clusterfl.engine.rules import GradOracle, add_penalty_grads_
from clusterfl.papers.p4.training.momentum import momentum_alpha, update_momentum
from clusterfl.papers.p4.training.rounds import Clustering
from clusterfl.steps.aggregation import broadcast
from clusterfl.steps.clustering import flatten, unflatten


@dataclass(frozen=True)
class GradientSum:
    """A local rule for the engine: SGD at `lr` that also sums the gradients it steps with.

    After m steps the state `sum.<name>` holds sum_l g(y^{l-1}) = (y^0 - y^m) / lr exactly as
    summed (not by subtracting models), so one step gives the gradient itself: Option 2 with
    m = 1 is Option 1.
    """

    lr: float
    weight_decay: float = 0.0
    capturable: ClassVar[bool] = False

    def init_state(self, params: Tensors) -> Tensors:
        return {f"sum.{k}": torch.zeros_like(w) for k, w in params.items()}

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle,
              prox: Prox | None) -> None:
        g = oracle.grads(params)
        add_penalty_grads_(g, params, self.weight_decay, prox)
        for k, w in params.items():
            state[f"sum.{k}"].add_(g[k])
            w.sub_(g[k], alpha=self.lr)

    @staticmethod
    def summed(state: Tensors) -> Tensors:
        return {k.removeprefix("sum."): v for k, v in state.items() if k.startswith("sum.")}


@dataclass(frozen=True)
class NeuralMomentumHyper(Clustering):
    """The client side (alpha, Option 1/2, the first round's alpha, how models start) and
    Threshold-Clustering's settings (`rounds.Clustering`); eta, m and the batch are the
    experiment's training block (`lr`, `local_steps`, `batch_size`)."""

    alpha: float = 0.5
    option: Literal[1, 2] = 1
    first_round_alpha_one: bool = True
    start: Literal["shared", "personal"] = "shared"

    def validate(self, key: str) -> None:
        Clustering.validate(self, key)
        require(0 < self.alpha <= 1, f"{key}.alpha", "must be in (0, 1]")
        require(self.option in (1, 2), f"{key}.option", "must be 1 or 2")
        require(self.start in ("shared", "personal"), f"{key}.start",
                "must be 'shared' or 'personal'")


class NeuralMomentum(NeuralAlgorithm[NeuralMomentumHyper]):
    """Base of the neural PFL-TC / PDL-TC: personal models, momentums, the client side."""

    @classmethod
    def make_context(cls, run: SeedInputs) -> NeuralContext:
        ctx = super().make_context(run)
        require(ctx.clients_per_round is None, f"experiments.{run.experiment.name}.training."
                "clients_per_round", "PFL-TC / PDL-TC take every client every round; unset it")
        return ctx

    def setup(self) -> None:
        if self.hyper.start == "shared":
            self.params = broadcast(self.initial_model(), self.num_clients)
        else:
            draws = [self.initial_model() for _ in range(self.num_clients)]
            self.params = {k: torch.stack([d[k] for d in draws]) for k in draws[0]}
        self.momentum = torch.zeros(self.num_clients, flatten(self.params).shape[1],
                                    dtype=torch.float64)
        self.rounds_done = 0
        self.clusters: torch.Tensor | None = None

    def directions(self) -> torch.Tensor:
        """g~_i of every client, flattened, [N, P] float64 (Option 1 or 2, through the engine)."""
        steps = 1 if self.hyper.option == 1 else None  # None: the schedule's local work
        plan = self.local_plan(self.all_clients, local_steps=steps)
        rule = GradientSum(self.lr, self.schedule.weight_decay)
        _, state = self.engine.train_with_state(self.params, self.all_clients, rule, plan)
        return flatten(GradientSum.summed(state)).double()

    def update_momentums(self) -> torch.Tensor:
        """m_i <- alpha g~_i + (1 - alpha) m_i for every client; returns the new [N, P]."""
        alpha = momentum_alpha(self.hyper.alpha, self.rounds_done,
                               self.hyper.first_round_alpha_one)
        self.momentum = update_momentum(self.momentum, self.directions(), alpha)
        return self.momentum

    def step(self, estimates: torch.Tensor) -> None:
        """x_i <- x_i - eta v_i for estimates [N, P] (each client's cluster estimate)."""
        move = unflatten(estimates, self.params)
        self.params = {k: w - self.lr * move[k].to(w.dtype)
                       for k, w in self.params.items()}
        self.rounds_done += 1

    def client_models(self) -> Tensors:
        return self.params

    def assignment(self) -> torch.Tensor | None:
        return self.clusters
