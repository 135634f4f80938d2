"""Per-FedAvg (Fallah, Mokhtari & Ozdaglar 2020, "Personalized Federated Learning with
Theoretical Guarantees: A Model-Agnostic Meta-Learning Approach", NeurIPS, Algorithm 1),
first-order (FO) and Hessian-free (HF) versions.

    for t = 0 .. T-1:
        server sends w^t to the selected clients
        each selected client i, from w = w^t, for each of its local meta-steps:
            w~ = w - alpha * grad f_i(w; D)                                   (batch D)
            FO: w <- w - beta * grad f_i(w~; D')                             (batch D')
            HF: g = grad f_i(w~; D'),                                         (batch D')
                w <- w - beta * (g - alpha * H_i(w; D'') g)                   (batch D'')
                H_i(w; D'') g ~= [grad f_i(w + delta g; D'') - grad f_i(w - delta g; D'')]
                                 / (2 delta)
        server: w^{t+1} = mean of the selected clients' w
    client i is evaluated with w^t after `personal_steps` SGD steps of size alpha on its own
    training data (the paper's personalization: one step of local gradient descent)

The local meta-step is `PerFedAvgStep`, a `LocalRule`: the engine hands a rule one batch per
call, so one meta-step takes 2 (FO) or 3 (HF) consecutive batches of the plan, and the rule
keeps w~ (and HF's g) in its per-client state between them.

Readings:
- beta, the step that moves w, is the schedule's lr (what the benchmark tunes, as for every
  other method); alpha, the personalization step, is a hyperparameter.
- D, D', D'': consecutive batches of the plan. Within a pass over a client's data the
  plan's batches are disjoint, so the three are independent draws as the paper asks (only a
  meta-step that straddles two passes may reuse a sample). With `local_steps: K` a client
  takes K meta-steps (the paper's tau), i.e. 2K or 3K batches; with `epochs` the pass's
  batches are grouped in pairs or triples, so a round sees each sample `epochs` times as
  every other method does (w moves half or a third as often as FedAvg's), and a last
  incomplete group changes nothing.
- HF's Hessian-vector product is the paper's central difference of two gradient evaluations
  (`oracle.grads` at w +- delta g on D''); `delta` default 0.001.
- The server's mean: `weighting: uniform` (default) is Algorithm 1's 1/(rn) sum over the
  selected clients; `samples` weights by n_k as FedAvg does.
- Evaluation: each round, every client fine-tunes a copy of w^{t+1} by `personal_steps`
  (default 1) SGD steps of size alpha on batches of the schedule's batch size from its
  training data, drawn from a generator of its own (the training rounds draw the same
  batches whatever `personal_steps` is); the copies are never uploaded. `personal_steps: 0`
  evaluates w itself. (PFLlib's `train_one_step` takes its first step on a *test* batch;
  ours never touches the test split before evaluating.)
- `alpha` default 0.005: the Per-FedAvg runs of the pFedMe authors' code (`CharlieDinh/
  pFedMe` README, `--learning_rate 0.005 --beta 0.001`, its first and second step sizes).
- The steps are plain SGD (the paper's): `training.optimizer` must be sgd and
  `training.weight_decay` 0.
"""

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import torch

from clusterfl.algorithms.base import NeuralAlgorithm, Weighting, require_plain_sgd, upload_weights
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine import GradOracle, Prox, Sgd, make_plan
from clusterfl.steps.aggregation import broadcast, weighted_average

PERSONAL_STREAM = 0x50464156  # the personalization generator's tag beside the run's seed


@dataclass(frozen=True)
class PerFedAvgHyper:
    variant: Literal["fo", "hf"] = "fo"
    alpha: float = 0.005
    delta: float = 0.001
    personal_steps: int = 1
    weighting: Weighting = "uniform"

    def validate(self, key: str) -> None:
        require(self.alpha > 0, f"{key}.alpha", f"must be > 0, got {self.alpha}")
        require(self.delta > 0, f"{key}.delta", f"must be > 0, got {self.delta}")
        require(self.personal_steps >= 0, f"{key}.personal_steps",
                f"must be >= 0, got {self.personal_steps}")


@dataclass(frozen=True)
class PerFedAvgStep:
    """One batch of a Per-FedAvg meta-step; `batches` consecutive calls make one meta-step.

    State per client: `temp.<name>` (w~), `outer.<name>` (HF: g = grad f(w~; D')) and
    `step` (batches taken). The clients a call sees have all taken the same number of
    batches (the engines' plans are prefixes in time), so they share the phase."""

    beta: float
    alpha: float
    hessian_free: bool = False
    delta: float = 0.001
    capturable: ClassVar[bool] = False

    @property
    def batches(self) -> int:
        return 3 if self.hessian_free else 2

    def init_state(self, params: Tensors) -> Tensors:
        state = {f"temp.{k}": w.clone() for k, w in params.items()}
        if self.hessian_free:
            state |= {f"outer.{k}": torch.zeros_like(w) for k, w in params.items()}
        first = next(iter(params.values()))
        state["step"] = torch.zeros(first.shape[0], dtype=torch.long, device=first.device)
        return state

    def step_(self, params: Tensors, state: Tensors, oracle: GradOracle, prox: Prox | None) -> None:
        if prox is not None:
            raise ValueError("PerFedAvgStep has no proximal term; pass prox=None")
        phase = int(state["step"][0]) % self.batches
        state["step"].add_(1)
        temp = {k: state[f"temp.{k}"] for k in params}
        if phase == 0:  # D: w~ = w - alpha grad f(w; D)
            for k, w in params.items():
                temp[k].copy_(w)
            oracle.descend_(temp, self.alpha)
        elif phase == 1:  # D': the meta-gradient's outer factor, grad f(w~; D')
            g = oracle.grads(temp)
            for k, w in params.items():
                if self.hessian_free:
                    state[f"outer.{k}"].copy_(g[k])
                else:
                    w.sub_(g[k], alpha=self.beta)
        else:  # D'': w <- w - beta (g - alpha H g), H g by central differences
            g = {k: state[f"outer.{k}"] for k in params}
            ahead = oracle.grads({k: w + self.delta * g[k] for k, w in params.items()})
            behind = oracle.grads({k: w - self.delta * g[k] for k, w in params.items()})
            scale = self.alpha / (2 * self.delta)
            for k, w in params.items():
                w.sub_(g[k] - scale * (ahead[k] - behind[k]), alpha=self.beta)


class PerFedAvg(NeuralAlgorithm[PerFedAvgHyper]):
    family = "personalized"

    def setup(self) -> None:
        require_plain_sgd(self.schedule, "perfedavg")
        self.global_model = self.initial_model()
        self.personal_rng = np.random.default_rng([self.ctx.seed, PERSONAL_STREAM])

    def meta_rule(self) -> PerFedAvgStep:
        h = self.hyper
        return PerFedAvgStep(self.lr, h.alpha, h.variant == "hf", h.delta)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        rule = self.meta_rule()
        meta_steps = self.schedule.local_steps
        plan = self.local_plan(clients, None if meta_steps is None else meta_steps * rule.batches)
        local = self.train_clients(broadcast(self.global_model, len(clients)), clients,
                                   rule=rule, plan=plan)
        weights = upload_weights(self.hyper.weighting, self.train_sizes, clients)
        self.global_model = weighted_average(local, weights)

    def client_models(self) -> Tensors:
        start = broadcast(self.global_model, self.num_clients)
        if self.hyper.personal_steps == 0:
            return start
        plan = make_plan(self.train_sizes.cpu().numpy(), self.schedule.batch_size,
                         self.personal_rng, local_steps=self.hyper.personal_steps)
        return self.engine.train(start, self.all_clients, Sgd(self.hyper.alpha), plan)
