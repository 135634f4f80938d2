"""Client side of PFL-TC / PDL-TC (P4, Algorithm 2 lines 2-3, Algorithm 3 line 2) for the
linear least-squares clients of Sec. 4, batched over all clients (no loop over clients).

Client i holds A_i [n_i, d] and y_i [n_i] and minimises
    f_i(x) = 1 / (2 n_i) * ||A_i x - y_i||^2,   grad f_i(x) = A_i^T (A_i x - y_i) / n_i,
the mean squared error over its samples (halved so that the gradient has no factor 2). A
mini-batch B of size b gives the unbiased stochastic gradient A_B^T (A_B x - y_B) / b.

Readings of vague passages:
- Stochastic gradient: `batch_size = None` uses the full local data (the Sec. 4 data are
  noiseless, so the gradient is then exact); an integer b draws b indices per client uniformly
  *with* replacement from the run's generator, which keeps g_i unbiased for any n_i.
- Option 1: g~_i = g_i(x_{i,t-1}), one stochastic gradient at the current model.
- Option 2: the paper writes (y^m - x_{i,t-1}) / eta after m local steps
  y^l = y^{l-1} - eta g_i(y^{l-1}); that is minus the summed gradients, and the server's step
  x <- x - eta v would then ascend. We read the sign as (x_{i,t-1} - y^m) / eta
  = sum_l g_i(y^{l-1}), which is Option 1 when m = 1, and accumulate the sum directly (not by
  subtracting the models) so that m = 1 gives Option 1's numbers bit for bit. Each local step
  draws a fresh mini-batch.
- Momentum: Algorithms 2-3 write m_t = alpha g~ - (1 - alpha) m_{t-1}; Sec. 3 (the definition
  under Assumption 6 and "Clustering Momentums") and the appendix write "+". We use "+", the
  exponential moving average the analysis needs (with "-" the momentum would flip sign every
  round). m_{i,0} = 0 and, as the appendix assumes (A.1.1, Assumption 2), alpha = 1 in the
  first round, so m_{i,1} = g~_i; `first_round_alpha_one = False` turns that off.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from clusterfl.core.options import require


@dataclass(frozen=True)
class LinearClients:
    """Stacked local data: features [N, n, d], targets [N, n], counts [N] (real rows per client).

    Clients with fewer than n samples are zero-padded; a zero row with a zero target adds
    nothing to a gradient or a loss, and the scalings use `counts`.
    """

    features: Tensor
    targets: Tensor
    counts: Tensor

    @property
    def num_clients(self) -> int:
        return self.features.shape[0]

    @property
    def dimension(self) -> int:
        return self.features.shape[2]


def stack_clients(
    x: np.ndarray, y: np.ndarray, client_indices: Sequence[np.ndarray],
    dtype: torch.dtype = torch.float64,
) -> LinearClients:
    """Gather each client's rows of (x [S, d], y [S]) into `LinearClients` (e.g. a partition's
    `train` index arrays over `threshold_regression`'s dataset)."""
    counts = [len(idx) for idx in client_indices]
    n, d = max(counts), x.shape[1]
    features = np.zeros((len(counts), n, d))
    targets = np.zeros((len(counts), n))
    for i, idx in enumerate(client_indices):
        features[i, : len(idx)] = x[idx]
        targets[i, : len(idx)] = y[idx]
    return LinearClients(torch.as_tensor(features, dtype=dtype),
                         torch.as_tensor(targets, dtype=dtype),
                         torch.as_tensor(counts, dtype=torch.int64))


@dataclass(frozen=True)
class LocalUpdate:
    """Client-side hyperparameters: eta, alpha, Option 1/2 with m local steps, batch size."""

    lr: float = 0.1
    alpha: float = 0.5
    option: Literal[1, 2] = 1
    local_steps: int = 1
    batch_size: int | None = None
    first_round_alpha_one: bool = True

    def validate(self, key: str) -> None:
        require(self.lr > 0, f"{key}.lr", "must be > 0")
        require(0 < self.alpha <= 1, f"{key}.alpha", "must be in (0, 1]")
        require(self.local_steps >= 1, f"{key}.local_steps", "must be >= 1")
        require(self.batch_size is None or self.batch_size >= 1, f"{key}.batch_size",
                "must be >= 1 (or null for the full local data)")

    def alpha_at(self, rounds_done: int) -> float:
        """alpha of the round that follows `rounds_done` completed rounds."""
        return momentum_alpha(self.alpha, rounds_done, self.first_round_alpha_one)


def momentum_alpha(alpha: float, rounds_done: int, first_round_alpha_one: bool) -> float:
    """alpha after `rounds_done` completed rounds: 1 in the first round (m_{i,1} = g~_i) when
    `first_round_alpha_one`, else `alpha`."""
    return 1.0 if rounds_done == 0 and first_round_alpha_one else alpha


def sample_batches(counts: Tensor, batch_size: int, generator: torch.Generator) -> Tensor:
    """[N, b] row indices, uniform with replacement within each client's `counts[i]` rows."""
    u = torch.rand((len(counts), batch_size), generator=generator, dtype=torch.float64)
    return (u * counts[:, None]).floor().long()


def client_losses(data: LinearClients, params: Tensor) -> Tensor:
    """f_i(x_i) on the full local data, [N], for params [N, d]."""
    residual = torch.einsum("cnd,cd->cn", data.features, params) - data.targets
    return (residual**2).sum(dim=1) / (2 * data.counts)


def cluster_losses(data: LinearClients, models: Tensor) -> Tensor:
    """f_i(theta_k) of every client at every model, [N, K], for models [K, d]."""
    residual = torch.einsum("cnd,kd->cnk", data.features, models) - data.targets[:, :, None]
    return (residual**2).sum(dim=1) / (2 * data.counts[:, None])


def gradients(data: LinearClients, params: Tensor, batch: Tensor | None = None) -> Tensor:
    """grad f_i at params [N, d]: on the full local data, or on rows `batch` [N, b] of each."""
    scale: Tensor | int
    if batch is None:
        a, y, scale = data.features, data.targets, data.counts[:, None]
    else:
        rows = torch.arange(data.num_clients)[:, None]
        a, y, scale = data.features[rows, batch], data.targets[rows, batch], batch.shape[1]
    residual = torch.einsum("cnd,cd->cn", a, params) - y
    return torch.einsum("cnd,cn->cd", a, residual) / scale


def stochastic_gradients(
    data: LinearClients, params: Tensor, batch_size: int | None,
    generator: torch.Generator | None,
) -> Tensor:
    """One g_i(x_i) per client: full local data, or a fresh mini-batch from `generator`."""
    if batch_size is None:
        return gradients(data, params)
    if generator is None:
        raise ValueError("mini-batch gradients need a torch.Generator")
    return gradients(data, params, sample_batches(data.counts, batch_size, generator))


def local_direction(
    data: LinearClients, params: Tensor, update: LocalUpdate,
    generator: torch.Generator | None = None,
) -> Tensor:
    """g~_i of Algorithm 2 line 2, [N, d]: Option 1 one gradient, Option 2 the displacement of
    m local steps over eta (summed gradients, see the module docstring)."""
    if update.option == 1:
        return stochastic_gradients(data, params, update.batch_size, generator)
    total = torch.zeros_like(params)
    local = params
    for _ in range(update.local_steps):
        g = stochastic_gradients(data, local, update.batch_size, generator)
        total = total + g
        local = local - update.lr * g
    return total


def update_momentum(momentum: Tensor, direction: Tensor, alpha: float) -> Tensor:
    """m_i <- alpha g~_i + (1 - alpha) m_i, [N, d]."""
    return alpha * direction + (1 - alpha) * momentum
