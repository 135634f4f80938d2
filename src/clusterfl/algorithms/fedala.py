"""FedALA (Zhang, Hua, Wang, Song, Xue, Ma & Guan 2023, "FedALA: Adaptive Local Aggregation
for Personalized Federated Learning", AAAI, Algorithm 1), read with the official code
`TsingZ0/FedALA` (`system/utils/ALA.py`, `clientALA.py`, `serverALA.py`).

Before local training each client blends the received global model into its old local
model, element-wise, with weights W it learns on its own data (Adaptive Local Aggregation):

    for t = 1 .. T:
        each client i (ALA), from the global model G and its local model L_i:
            lower layers: theta_i <- G
            top p:        theta_i <- L_i + (G - L_i) * W_i
            on a random fraction s of its data, batch by batch:
                W_i <- clip(W_i - eta * grad_theta L(theta_i) * (G - L_i), 0, 1)
                theta_i <- L_i + (G - L_i) * W_i                  (top p)
            (round of its first ALA: epochs until the loss settles; later: one epoch)
        each selected client i: L_i <- SGD_i(theta_i)             (the schedule's local work)
        server: G <- sum_i n_i / n * L_i
    client i uses theta_i

The weight learning is a `LocalRule` (`LearnAggregationWeights`) on a stack holding theta
(the model's names, what the engine's oracle differentiates) and, per learned parameter k,
`ala.weight.k` (W), `ala.local.k` (L) and `ala.gap.k` (G - L): the rule steps W and sets
theta from it; the engine only moves the stack's rows around.

Readings (from the official code where the paper is silent):
- When W is learned: W starts at 1 (all-global) once per client and is kept across rounds.
  A client's first ALA learns it until convergence: until more than `num_pre_loss` epochs
  are recorded and the std of the last `num_pre_loss` recorded losses is below `threshold`
  (official 10 and 0.1); every later ALA runs one epoch (`ALA.start_phase`). The official
  loop has no cap; `max_start_epochs` (100) stops a loss that never settles.
- The recorded loss: the official code records the loss of each epoch's last batch; the
  engine returns no losses, so we record the client's mean training loss at theta after each
  epoch (the same quantity without the batch noise).
- When ALA runs: the official server re-initializes *every* client with ALA at the start of
  each round (`send_models`), then evaluates those models, then trains the selected ones;
  round 0's ALA is a no-op (every local model equals the global one). We run the same
  sequence shifted by half a round: round t trains the selected clients from their current
  models, aggregates, then runs ALA for every client with the new global model; what is
  evaluated after round t is the ALA-initialized models, as in the official evaluation,
  and round 1 trains from the initial model (the official round 0). With every client
  taking part (the paper's and the benchmark's setting) this is Algorithm 1 exactly.
- The data ALA learns on: a random s-fraction of the client's training samples (int(s * n),
  at least 1), drawn anew for each ALA with the run's generator, in batches of the
  schedule's batch size in a fixed order, the same for every epoch of that ALA (the official
  `rand_loader` is an unshuffled window of int(s * n) samples at a random offset; the paper
  says "randomly sample s%").
- `p` counts parameter tensors from the top in the model's order, as the official
  `layer_idx` does (default 2: the output layer's weight and bias); `s` is the official
  `rand_percent` / 100 (default 0.8), `eta` its weight learning rate (default 1.0).
- Aggregation weights n_i / n over the selected clients (the official `receive_models`).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from clusterfl.algorithms.base import NeuralAlgorithm
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine import BatchPlan, GradOracle, Prox
from clusterfl.steps.aggregation import broadcast, gather, scatter, weighted_average

ALA_PREFIX = "ala."  # the rule's per-client tensors in the stack; the rest is the model


@dataclass(frozen=True)
class FedAlaHyper:
    eta: float = 1.0  # learning rate of the aggregation weights W
    s: float = 0.8  # the fraction of a client's training samples W is learned on
    p: int = 2  # parameter tensors, from the top, that get weights (lower ones: global)
    threshold: float = 0.1  # first ALA: until the std of the recent losses is below this
    num_pre_loss: int = 10  # ... over this many recorded losses
    max_start_epochs: int = 100  # a cap the official code has not

    def validate(self, key: str) -> None:
        require(self.eta > 0, f"{key}.eta", "must be > 0")
        require(0 < self.s <= 1, f"{key}.s", f"must be in (0, 1], got {self.s}")
        require(self.p >= 1, f"{key}.p", "must be >= 1")
        require(self.threshold > 0, f"{key}.threshold", "must be > 0")
        require(self.num_pre_loss >= 1, f"{key}.num_pre_loss", "must be >= 1")
        require(self.max_start_epochs >= 1, f"{key}.max_start_epochs", "must be >= 1")


@dataclass(frozen=True)
class LearnAggregationWeights:
    """One batch of ALA's weight learning for the learned parameters k:
    W_k <- clip(W_k - eta * grad_k * gap_k, 0, 1), then theta_k <- local_k + gap_k * W_k."""

    eta: float
    learned: tuple[str, ...]
    capturable: ClassVar[bool] = False

    def init_state(self, params: Tensors) -> Tensors:
        return {}

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        if prox is not None:
            raise ValueError("ALA's weight learning has no proximal term; pass prox=None")
        grads = oracle.grads({k: v for k, v in params.items() if not k.startswith(ALA_PREFIX)})
        for k in self.learned:
            weight, gap = params[f"{ALA_PREFIX}weight.{k}"], params[f"{ALA_PREFIX}gap.{k}"]
            weight.addcmul_(grads[k], gap, value=-self.eta).clamp_(0.0, 1.0)
            params[k].copy_(params[f"{ALA_PREFIX}local.{k}"] + gap * weight)


def subset_plan(orders: Sequence[np.ndarray], batch_size: int) -> BatchPlan:
    """One pass over each client's sample positions `orders[c]` in that order, in batches
    of `batch_size` (the last one partial)."""
    steps = max((-(-len(o) // batch_size) for o in orders), default=0)
    width = min(batch_size, max((len(o) for o in orders), default=1))
    index = np.zeros((steps, len(orders), width), dtype=np.int64)
    mask = np.zeros((steps, len(orders), width), dtype=bool)
    for c, order in enumerate(orders):
        for step, start in enumerate(range(0, len(order), batch_size)):
            batch = order[start : start + batch_size]
            index[step, c, : len(batch)] = batch
            mask[step, c, : len(batch)] = True
    return BatchPlan(torch.from_numpy(index), torch.from_numpy(mask))


def converged(losses: Sequence[float], num_pre_loss: int, threshold: float) -> bool:
    """The official stopping rule of the first ALA: more than `num_pre_loss` losses
    recorded, and the (population) std of the last `num_pre_loss` below `threshold`."""
    return len(losses) > num_pre_loss and float(np.std(losses[-num_pre_loss:])) < threshold


class FedAla(NeuralAlgorithm[FedAlaHyper]):
    family = "personalized"
    transient = (*NeuralAlgorithm.transient, "learned")

    def setup(self) -> None:
        model = self.initial_model()
        names = list(model)
        require(self.hyper.p <= len(names), "fedala.p",
                f"must be <= {len(names)}, the model's parameter tensors ({', '.join(names)})")
        self.learned = tuple(names[-self.hyper.p:])
        self.global_model = model
        self.models = broadcast(model, self.num_clients)  # each client's theta_i
        self.weights = {k: torch.ones_like(self.models[k]) for k in self.learned}
        self.started = torch.zeros(self.num_clients, dtype=torch.bool)  # first ALA done
        self.ala_epochs: list[int] = []

    def round(self, round_: int, clients: torch.Tensor) -> None:
        local = self.train_clients(gather(self.models, clients), clients)
        self.models = scatter(self.models, clients, local)
        self.global_model = weighted_average(local, self.train_sizes[clients])
        self.adaptive_local_aggregation()

    def client_models(self) -> Tensors:
        return self.models

    def round_arrays(self) -> dict[str, list]:
        """Each client's ALA epochs this round (its first ALA: until the loss settled)."""
        return {"ala_epochs": self.ala_epochs}

    # -- ALA ----------------------------------------------------------------------------------
    def ala_stack(self) -> Tensors:
        """Every client's theta (lower layers global, top ones L + (G - L) * W) and the
        rule's W, L and G - L of the learned parameters."""
        stack = broadcast(self.global_model, self.num_clients)
        for k in self.learned:
            local = self.models[k]
            gap = stack[k] - local
            stack[k] = local + gap * self.weights[k]
            stack |= {f"{ALA_PREFIX}weight.{k}": self.weights[k].clone(),
                      f"{ALA_PREFIX}local.{k}": local.clone(), f"{ALA_PREFIX}gap.{k}": gap}
        return stack

    def ala_plan(self) -> BatchPlan:
        """One epoch over a random s-fraction of each client's training samples."""
        sizes = self.train_sizes.cpu().tolist()
        orders = [self.rng.permutation(n)[: max(1, int(self.hyper.s * n))] for n in sizes]
        return subset_plan(orders, self.schedule.batch_size)

    def adaptive_local_aggregation(self) -> None:
        """theta_i <- ALA(G, L_i) for every client: one epoch of weight learning, or, at a
        client's first ALA, epochs until its training loss settles."""
        h = self.hyper
        rule = LearnAggregationWeights(h.eta, self.learned)
        stack, plan = self.ala_stack(), self.ala_plan()
        epochs = np.zeros(self.num_clients, dtype=np.int64)
        losses: list[list[float]] = [[] for _ in range(self.num_clients)]
        rows = self.all_clients
        while len(rows):
            columns = BatchPlan(plan.index[:, rows], plan.mask[:, rows])
            stack = scatter(stack, rows, self.engine.train(gather(stack, rows), rows, rule,
                                                           columns))
            epochs[rows.numpy()] += 1
            rows = rows[~self.started[rows]]  # later ALAs: one epoch
            if not len(rows):
                break
            loss = self.training_loss({k: stack[k][rows] for k in self.models}, rows)
            for r, value in zip(rows.tolist(), loss.tolist(), strict=True):
                losses[r].append(value)
            going = [not converged(losses[r], h.num_pre_loss, h.threshold)
                     and epochs[r] < h.max_start_epochs for r in rows.tolist()]
            rows = rows[torch.tensor(going, dtype=torch.bool)]
        self.models = {k: stack[k] for k in self.models}
        self.weights = {k: stack[f"{ALA_PREFIX}weight.{k}"] for k in self.learned}
        self.started[:] = True
        self.ala_epochs = epochs.tolist()

    def training_loss(self, models: Tensors, clients: torch.Tensor) -> torch.Tensor:
        """Each client's mean training loss under its model."""
        total, _ = self.engine.evaluate(models, clients, "train")
        return total / self.train_sizes[clients].to(total.dtype)
