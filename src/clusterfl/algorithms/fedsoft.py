"""FedSoft (Ruan & Joe-Wong 2022, "FedSoft: Soft Clustered Federated Learning with Proximal
Local Updating", AAAI, Algorithm 1), read with the official code `ycruan/FedSoft`
(`servers.py`, `clients.py`).

    S centers c_s; every client k keeps a personalized model w_k
    for t = 0 .. T-1:
        if t mod tau == 0:   every client assigns each of its points to the center with the
                             smallest loss: u_ks = max(n_ks / n_k, sigma)
        v_sk = u_ks n_k / sum_k' u_k's n_k'
        for each s: Sel_s = K clients drawn with probabilities v_sk
        every client in the union of the Sel_s minimises
            h_k(w) = f_k(w) + lam/2 sum_s u_ks ||w - c_s||^2
        c_s <- (1/K) sum_{k in Sel_s} w_k
    outputs: the S centers and one personalized model w_k per client

Readings of vague passages, and where we follow the official code:
- Selection: K clients per cluster *without* replacement, drawn one after another with
  probabilities proportional to v_sk (numpy's `choice(N, K, replace=False, p=v_s)`, as the
  official `servers.py`). Without replacement because a client solves one problem per round
  and returns one model: a duplicate would count the same model twice in the mean. So
  "selected with probability v_sk" holds for the first draw; later draws renormalise over the
  clients not yet drawn (the tests check these inclusion probabilities exactly).
- v_sk is normalised over all N clients (official: `importance_weights_matrix /= sum(axis=0)`);
  the paper's Eq. 6 writes the sum over Sel_s, which is circular before Sel_s is drawn.
- A client in several Sel_s trains once (official: one local run per client in the union) and
  its model counts in every center whose Sel_s holds it.
- Full participation (`selection_size` None or >= N): no draw; c_s = sum_k v_sk w_k, the
  paper's "in the case when all clients participate" rule (official `do_selection=False`).
  With S = 1 this is FedAvg's n_k/n average.
- The local problem starts from the client's own previous model w_k (official: each client
  keeps its model between rounds; the paper's Table 5 with lam = 0 "the local training is
  done separately without any cooperation", which only holds for this reading). All clients
  start from one shared initial model, drawn first (official `client_init_model`); the S
  centers are S further draws. Clients never selected keep that initial model.
- The local solver is the schedule's (the paper: Adam, 10 epochs, batch 10). Adam's moments
  start fresh each round (each round is a new problem h_k^t); the official client keeps one
  optimizer for the whole run, and its loader does not shuffle.
- The proximal term is one `Prox` with weight sum_s u_ks and center sum_s u_ks c_s / weight:
  the same gradient lam sum_s u_ks (w - c_s) (the official loss adds it before Adam's step,
  as the engine's Adam does).
- Round r of the loop is the paper's t = r - 1: the importance weights are estimated in
  rounds 1, 1 + tau, ... with the centers as they are at the start of the round.
- `clients_per_round` of the schedule does not apply: FedSoft selects `selection_size`
  clients per cluster itself.
"""

from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.algorithms.base import NeuralAlgorithm
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.engine.base import Prox
from clusterfl.steps.aggregation import broadcast, gather, scatter, weighted_average


@dataclass(frozen=True)
class FedSoftHyper:
    num_clusters: int = 2  # S
    tau: int = 2  # importance weights are re-estimated every tau rounds
    selection_size: int | None = None  # K per cluster (paper: 60 of 100); None: all clients
    sigma: float = 1e-4  # the counter smoother
    lam: float = 1.0  # lambda, the weight of the proximal term

    def validate(self, key: str) -> None:
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")
        require(self.tau >= 1, f"{key}.tau", "must be >= 1")
        require(self.selection_size is None or self.selection_size >= 1,
                f"{key}.selection_size", "must be >= 1 (or null for all clients)")
        require(0 < self.sigma <= 1, f"{key}.sigma", "must be in (0, 1]")
        require(self.lam >= 0, f"{key}.lam", "must be >= 0")


def importance_weights(losses: torch.Tensor, mask: torch.Tensor, sigma: float) -> torch.Tensor:
    """u[C, S]: each client's share of points whose smallest loss is center s's, >= sigma.

    `losses[S, C, N]`, `mask[C, N]` as `LocalEngine.sample_losses` returns them; ties go to
    the lower center index.
    """
    nearest = losses.argmin(dim=0)  # [C, N]
    centers = torch.arange(losses.shape[0], device=losses.device).view(-1, 1, 1)
    counts = ((nearest.unsqueeze(0) == centers) & mask.unsqueeze(0)).sum(dim=2).T  # [C, S]
    n = mask.sum(dim=1, keepdim=True).clamp(min=1)
    return (counts.to(losses.dtype) / n).clamp(min=sigma)


def aggregation_weights(u: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """v[N, S] with v[k, s] = u_ks n_k / sum_k' u_k's n_k' (each column sums to 1)."""
    un = u * n.to(u.dtype).view(-1, 1)
    return un / un.sum(dim=0, keepdim=True)


def select_per_cluster(v: torch.Tensor, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Sel_s for each s: k distinct clients drawn with probabilities v[:, s], sorted."""
    out = []
    for s in range(v.shape[1]):
        p = v[:, s].double().cpu().numpy()
        out.append(np.sort(rng.choice(len(p), size=k, replace=False, p=p / p.sum())))
    return out


def fedsoft_prox(centers: Tensors, u: torch.Tensor, lam: float) -> Prox:
    """lam/2 sum_s u_cs ||w - c_s||^2 for each row c of `u[C, S]`, as one `Prox` per client."""
    u = u.to(next(iter(centers.values())).device)
    weight = u.sum(dim=1)
    center = {k: torch.tensordot(u / weight.view(-1, 1), c, dims=1) for k, c in centers.items()}
    return Prox(mu=lam, center=center, weight=weight)


class FedSoft(NeuralAlgorithm[FedSoftHyper]):
    family = "clustered"

    def setup(self) -> None:
        if self.schedule.clients_per_round is not None:
            raise ValueError("FedSoft selects selection_size clients per cluster itself; "
                             "leave the schedule's clients_per_round unset")
        self.local = broadcast(self.initial_model(), self.num_clients)
        draws = [self.initial_model() for _ in range(self.hyper.num_clusters)]
        self.cluster_models = {k: torch.stack([d[k] for d in draws]) for k in draws[0]}
        self.u = torch.full((self.num_clients, self.hyper.num_clusters),
                            1.0 / self.hyper.num_clusters)

    def select_clients(self, round_: int) -> torch.Tensor:
        return self.all_clients  # the per-cluster selection happens in `round`

    def estimate_importance(self) -> torch.Tensor:
        losses, mask = self.engine.sample_losses(self.cluster_models, self.all_clients, "train")
        return importance_weights(losses, mask, self.hyper.sigma).cpu()

    def round(self, round_: int, clients: torch.Tensor) -> None:
        h = self.hyper
        if (round_ - 1) % h.tau == 0:
            self.u = self.estimate_importance()
        n = self.train_sizes.cpu()
        size = h.selection_size
        full = size is None or size >= self.num_clients
        if size is None or full:  # every client in every cluster
            selection = [np.arange(self.num_clients)] * h.num_clusters
        else:
            selection = select_per_cluster(aggregation_weights(self.u, n), size, self.rng)
        union = torch.from_numpy(np.unique(np.concatenate(selection)))
        prox = fedsoft_prox(self.cluster_models, self.u[union], h.lam) if h.lam > 0 else None
        trained = self.train_clients(gather(self.local, union), union, prox=prox)
        self.local = scatter(self.local, union, trained)
        if full:  # c_s = sum_k v_sk w_k
            un = (self.u * n.to(self.u.dtype).view(-1, 1)).to(self.train_sizes.device)
            new = [weighted_average(self.local, un[:, s]) for s in range(h.num_clusters)]
        else:  # c_s = mean of the returned models of Sel_s
            new = [{k: v[torch.from_numpy(sel)].mean(dim=0) for k, v in self.local.items()}
                   for sel in selection]
        self.cluster_models = {k: torch.stack([c[k] for c in new]) for k in new[0]}

    def centers(self) -> Tensors:
        return self.cluster_models

    def importance(self) -> torch.Tensor:
        return self.u

    def client_models(self) -> Tensors:
        return self.local
