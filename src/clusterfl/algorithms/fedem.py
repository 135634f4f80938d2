"""FedEM (Marfoq, Neglia, Bellet, Kameni & Vidal 2021, "Federated Multi-Task Learning under a
Mixture of Distributions", NeurIPS, Algorithm 1), read with the official code `omarfoq/FedEM`
(`client.py` MixtureClient, `learners/learner.py`, `aggregator.py` CentralizedAggregator).

    M shared components theta_m; client k keeps mixture weights pi_k (uniform at first)
    each round, every selected client k, with the components it receives:
        E-step:  q_m(i) = pi_km exp(-loss_m(i)) / sum_m' pi_km' exp(-loss_m'(i))
                 (the per-sample loss stands in for -log p_m(y_i | x_i))
        M-step:  pi_km = mean over k's training samples of q_m(i)
        each component m: local training from theta_m on the weighted loss
                 sum_{i in batch} q_m(i) loss_m(i) / |batch|
    server: theta_m <- sum over all clients of n_k / n * (client k's copy of theta_m)

Readings and choices:
- Unsampled clients (`clients_per_round` < N, uniform without replacement, as the official
  `rng.sample`): the official server averages every client's copy of each component with
  weights n_k / n, and an unsampled client's copy is the component it last received. So
  theta_m <- sum_{k sampled} n_k/n theta_km + (sum_{k unsampled} n_k/n) theta_m: a step
  damped by the sampled share of the data. Their pi_k and q_k stay as last computed (at
  first uniform) until they are sampled again. With every client sampled this is the
  n_k/n average, and with M = 1 exactly FedAvg (the tests check it).
- E-step losses: the engine's per-sample loss, cross-entropy (= -log p) for classification
  and squared error for regression, i.e. a Gaussian likelihood with variance 1/2 (the
  official code uses its criterion the same way).
- `importance()` is pi (the client's estimated mixture over components), from its last
  E/M-step, i.e. computed with the components it received, before its local training.
- The M components train on the same client through one engine call (rows = clients x M,
  each with its own batch order, as each official learner iterates its own shuffled loader);
  Adam's moments start fresh each round (the official learners keep their optimizer).
- Components: M independent draws of the model from the run's generator.
- Evaluation follows FedSoft's protocol (the `holdout` evaluator): a client's local model is the
  component with its largest pi, not FedEM's own mixture prediction.
"""

from dataclasses import dataclass

import torch

from clusterfl.algorithms.base import NeuralAlgorithm
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import largest_weight_centers, weighted_average


@dataclass(frozen=True)
class FedEMHyper:
    num_components: int = 2  # M

    def validate(self, key: str) -> None:
        require(self.num_components >= 1, f"{key}.num_components", "must be >= 1")


def e_step(losses: torch.Tensor, mask: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """Responsibilities q[M, C, N] = softmax_m(log pi[c, m] - losses[m, c, i]), 0 at padding."""
    log_prior = pi.T.log().unsqueeze(-1)  # [M, C, 1]
    q = torch.softmax(log_prior - losses, dim=0)
    return q * mask.unsqueeze(0).to(q.dtype)


def m_step(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mixture weights pi[C, M]: each client's mean responsibility over its samples."""
    n = mask.sum(dim=1).clamp(min=1).to(q.dtype)
    return (q.sum(dim=2) / n).T


def component_average(
    trained: Tensors, old: Tensors, n: torch.Tensor, sampled: torch.Tensor
) -> Tensors:
    """Official server step: for each component, the n_k-weighted mean over all clients,
    where the sampled clients bring `trained[m * C + c]` and the others the old component."""
    m_count = next(iter(old.values())).shape[0]
    c = len(sampled)
    rest = n.sum() - n[sampled].sum()
    weights = torch.cat([n[sampled], rest.view(1)]) if rest > 0 else n[sampled]
    out = []
    for m in range(m_count):
        rows = {k: v[m * c : (m + 1) * c] for k, v in trained.items()}
        if rest > 0:
            rows = {k: torch.cat([v, old[k][m : m + 1]]) for k, v in rows.items()}
        out.append(weighted_average(rows, weights.to(next(iter(rows.values())).device)))
    return {k: torch.stack([o[k] for o in out]) for k in old}


class FedEM(NeuralAlgorithm[FedEMHyper]):
    family = "clustered"

    def setup(self) -> None:
        draws = [self.initial_model() for _ in range(self.hyper.num_components)]
        self.components = {k: torch.stack([d[k] for d in draws]) for k in draws[0]}
        m = self.hyper.num_components
        self.pi = torch.full((self.num_clients, m), 1.0 / m)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        m, c = self.hyper.num_components, len(clients)
        losses, mask = self.engine.sample_losses(self.components, clients, "train")
        q = e_step(losses, mask, self.pi[clients].to(losses.device))
        self.pi[clients] = m_step(q, mask).cpu()
        rows = clients.repeat(m)  # row m * C + i: component m on client clients[i]
        start = {k: v.repeat_interleave(c, dim=0) for k, v in self.components.items()}
        plan = self.local_plan(rows).with_sample_weights(q.reshape(m * c, -1))
        trained = self.train_clients(start, rows, plan=plan)
        self.components = component_average(trained, self.components, self.train_sizes,
                                            clients.to(self.train_sizes.device))

    def centers(self) -> Tensors:
        return self.components

    def importance(self) -> torch.Tensor:
        return self.pi

    def client_models(self) -> Tensors:
        return largest_weight_centers(self.components, self.pi)
