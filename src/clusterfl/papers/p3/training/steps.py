"""P3's (mmFL) named steps as small pure functions on stacked parameters and index tensors.

- `modality_seed`: each modality cluster draws its batches, held-out subsets and initial
  model from its own stream, so one cluster's randomness never depends on another's (with
  the head unshared, a cluster of mmFL is then exactly a FedAvg run, tested).
- `holdout_positions` (Step 2): each client's held-out subset d and the rest of its data.
- `restrict_plan`: a batch plan drawn over a subset, mapped to positions in the client's data.
- `rate_columns`: the plan's columns of the clients that picked one rate (Step 7 trains each
  rate's clients in one engine call).
- `select_rates` (Steps 4-6, Eq. 4): argmin over candidate rates of the held-out loss.
- `server_step` (Step 10, Eq. 8): FedAvg of the encoders inside each modality cluster; the
  head averaged over the clients of every modality (shared) or inside each cluster.
"""

import numpy as np
import torch

from clusterfl.core.types import Tensors
from clusterfl.engine import BatchPlan, ClientData
from clusterfl.papers.p3.training.model import HEAD
from clusterfl.steps.aggregation import weighted_average


def modality_seed(seed: int, modality: int) -> int:
    """The seed of modality cluster `modality`'s generators in a run with `seed`."""
    return seed * 1000 + modality


def holdout_positions(
    sizes: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(fit [C, F], fit_n [C], held [C, H], held_n [C]): client c's samples at positions
    `held[c, :held_n[c]]` form its held-out subset, `round(n * fraction)` of them but at
    least 1 and at most n - 1 (none for a client with fewer than 2 samples); the rest, in
    random order, are `fit[c, :fit_n[c]]`. Padding positions hold 0."""
    perms, held_n = [], []
    for n in sizes:
        n = int(n)
        perms.append(rng.permutation(n))
        held_n.append(0 if n < 2 else min(max(round(n * fraction), 1), n - 1))
    held_n_arr = np.array(held_n, dtype=np.int64)
    fit_n_arr = np.asarray(sizes, dtype=np.int64) - held_n_arr
    held = np.zeros((len(sizes), max(int(held_n_arr.max(initial=0)), 1)), dtype=np.int64)
    fit = np.zeros((len(sizes), max(int(fit_n_arr.max(initial=0)), 1)), dtype=np.int64)
    for c, (perm, h) in enumerate(zip(perms, held_n, strict=True)):
        held[c, :h] = perm[:h]
        fit[c, : len(perm) - h] = perm[h:]
    return (torch.from_numpy(fit), torch.from_numpy(fit_n_arr), torch.from_numpy(held),
            torch.from_numpy(held_n_arr))


def restrict_plan(plan: BatchPlan, positions: torch.Tensor) -> BatchPlan:
    """`plan` drawn over each client's subset (sample j of client c = `positions[c, j]`),
    as positions in the client's full data."""
    steps = plan.index.shape[0]
    table = positions.unsqueeze(0).expand(steps, *positions.shape)
    return BatchPlan(torch.gather(table, 2, plan.index), plan.mask, plan.weight)


def rate_columns(plan: BatchPlan, rows: torch.Tensor) -> BatchPlan:
    """The plan of the clients at `rows` (its columns), as one engine call trains them."""
    weight = None if plan.weight is None else plan.weight[:, rows]
    return BatchPlan(plan.index[:, rows], plan.mask[:, rows], weight)


def held_out_data(data: ClientData, held: torch.Tensor, held_n: torch.Tensor) -> ClientData:
    """`data` with its test split replaced by each client's held-out training samples, so
    that an engine's `evaluate(..., "test")` gives the held-out loss sums."""
    rows = torch.arange(data.num_clients).view(-1, 1)
    held = held.to(data.train_x.device)
    return ClientData(data.train_x, data.train_y, data.train_n, data.train_x[rows, held],
                      data.train_y[rows, held], held_n.to(data.train_n.device))


def select_rates(losses: torch.Tensor) -> torch.Tensor:
    """Eq. 4: for held-out losses [R, C] (candidate rate r, client c), the index of each
    client's lowest; a NaN (a diverged temporary model) counts as +inf, ties go to the first
    listed rate."""
    clean = torch.where(torch.isnan(losses), torch.full_like(losses, float("inf")), losses)
    return clean.argmin(dim=0)


def select_modality_rate(losses: torch.Tensor) -> torch.Tensor:
    """Eq. 2's reading per modality: one rate for all C clients, the lowest mean over clients
    of the held-out losses [R, C] (NaN as +inf, ties to the first listed); [C]."""
    clean = torch.where(torch.isnan(losses), torch.full_like(losses, float("inf")), losses)
    return clean.mean(dim=1).argmin().expand(losses.shape[1]).clone()


def server_step(local: list[Tensors], weights: list[torch.Tensor], share_head: bool
                ) -> list[Tensors]:
    """Step 10: the next global model of each modality cluster m from its clients' trained
    models `local[m]` ([n_m, ...]) and their weights `weights[m]` (ones: Eq. 8's 1/N mean;
    sample counts: FedAvg's |D_n| / |D^m|).

    Encoder parameters: the weighted mean inside cluster m. Head parameters (`model.HEAD`):
    the same mean over the clients of every cluster when `share_head` (the server's one
    "decoder"), else inside m.
    """
    out = [weighted_average(models, w) for models, w in zip(local, weights, strict=True)]
    if share_head:
        heads = [k for k in local[0] if k.startswith(HEAD)]
        every = {k: torch.cat([models[k] for models in local]) for k in heads}
        shared = weighted_average(every, torch.cat(weights))
        for model in out:
            model.update({k: v.clone() for k, v in shared.items()})
    return out
