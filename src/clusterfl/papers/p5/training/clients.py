"""All P5 clients' local computations as one batched tensor program, plus a plain per-client
loop (`reference_*`) that the tests use to check the batched path.

Layout: clients are stacked on a leading axis and padded to the largest client, X_p as
`x[p]` (M x N_max) and H_p as `h[p]` (K x N_max); `mask[p]` marks the real columns. Padded
columns hold X = 0 and H = 0, and stay 0 under every H step (their gradient is
W^T W 0 - W^T 0 + grad R_H(0) = 0); the mask is still applied so that this does not rest on
floating point. Padding costs P * N_max * M numbers, which is M N for balanced splits; batched
matrix products over padded blocks beat segment sums over a concatenated X by an order of
magnitude on CPU (measured at P = 100, M = 2000, N = 10000, K = 20: a CSR sparse product
was 17x and per-k index_add 50x slower than `bmm`).

Because every client takes its H steps with the same broadcast W (Algorithms 1 and 2) and
the H step acts column by column, the statistics W^T W (K x K) and W^T X_p (K x N_p) are
computed once per round, and each of the Q1 steps then costs O(K^2 N) instead of O(M K N).
For the same reason the H steps run on the selected clients' real columns side by side
(`columns`, K x n), not on the padded blocks: under power-law sizes (P5's `ubls` schemes) the
largest client holds many times N / P samples, and the padded H steps of a p5_fmnist_ubls
FedCGds round cost 4.4 s against 0.10 s for the balanced split (1 thread, measured). FedCGds's
server needs only the sums over clients of (U_p, V_p), which are the same products over the
side-by-side columns.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.papers.p5.training.onmf import NU, RHO, grad_w, h_step, h_step_gram


@dataclass(frozen=True)
class Federation:
    """The clients' data, stacked and padded. `index[p, i]` is the dataset row of client p's
    i-th column (-1 for padding); `weights` are w_p = N_p / N (eq. (4a))."""

    x: torch.Tensor  # (P, M, N_max) float64
    mask: torch.Tensor  # (P, N_max) bool
    sizes: torch.Tensor  # (P,) int64
    weights: torch.Tensor  # (P,) float64
    index: torch.Tensor  # (P, N_max) int64
    columns: torch.Tensor  # (M, N) every X_p side by side, clients in order (no padding)
    position: torch.Tensor  # (P, N_max) int64: client p's i-th column in `columns` (-1: pad)

    @classmethod
    def from_parts(cls, rows: np.ndarray, parts: Sequence[np.ndarray],
                   device: str | torch.device = "cpu") -> "Federation":
        """`rows` holds samples as rows (N x M, as in `Dataset.x`); `parts[p]` client p's rows."""
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        n_max = int(sizes.max())
        index = np.full((len(parts), n_max), -1, dtype=np.int64)
        for p, part in enumerate(parts):  # index bookkeeping only, once per federation
            index[p, : len(part)] = part
        mask = index >= 0
        padded = np.zeros((len(parts), n_max, rows.shape[1]))
        padded[mask] = rows[index[mask]]
        position = np.full_like(index, -1)
        position[mask] = np.arange(int(sizes.sum()))
        return cls(
            x=torch.as_tensor(padded.transpose(0, 2, 1).copy(), dtype=torch.float64,
                              device=device),
            mask=torch.as_tensor(mask, device=device),
            sizes=torch.as_tensor(sizes, device=device),
            weights=torch.as_tensor(sizes / sizes.sum(), dtype=torch.float64, device=device),
            index=torch.as_tensor(index, device=device),
            columns=torch.as_tensor(rows[index[mask]].T.copy(), dtype=torch.float64,
                                    device=device),
            position=torch.as_tensor(position, device=device),
        )

    @property
    def num_clients(self) -> int:
        return self.x.shape[0]

    @property
    def features(self) -> int:
        return self.x.shape[1]

    def client_x(self, p: int) -> torch.Tensor:
        """X_p without padding (M x N_p)."""
        return self.x[p, :, : int(self.sizes[p])]

    def client_h(self, h: torch.Tensor, p: int) -> torch.Tensor:
        return h[p, :, : int(self.sizes[p])]

    def selected_x(self, selected: torch.Tensor) -> torch.Tensor:
        """The selected clients' X_p side by side (M x n); `selected` in increasing order."""
        if len(selected) == self.num_clients:
            return self.columns
        return self.columns[:, self.position[selected][self.mask[selected]]]

    def selected_h(self, h: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
        """The selected clients' H_p side by side (K x n), in `selected_x`'s column order."""
        return h[selected].transpose(1, 2)[self.mask[selected]].T

    def replace_h(self, h: torch.Tensor, selected: torch.Tensor,
                  columns: torch.Tensor) -> torch.Tensor:
        """`h` (P, K, N_max) with the selected clients' H_p taken from `columns` (K x n)."""
        block = torch.zeros(len(selected), h.shape[1], h.shape[2], dtype=h.dtype,
                            device=h.device)
        block.transpose(1, 2)[self.mask[selected]] = columns.T
        return h.index_copy(0, selected, block)

    def stack_h(self, hs: Sequence[torch.Tensor]) -> torch.Tensor:
        """Per-client H_p (K x N_p) -> padded (P, K, N_max)."""
        out = torch.zeros(len(hs), hs[0].shape[0], self.x.shape[2], dtype=hs[0].dtype,
                          device=hs[0].device)
        for p, h_p in enumerate(hs):  # conversion helper for tests and initialisation
            out[p, :, : h_p.shape[1]] = h_p
        return out

    def flat_h(self, h: torch.Tensor) -> torch.Tensor:
        """Padded H -> K x N in dataset row order (column j is sample j)."""
        out = torch.empty(h.shape[1], int(self.sizes.sum()), dtype=h.dtype, device=h.device)
        out[:, self.index[self.mask]] = h.transpose(0, 1)[:, self.mask]
        return out

    def padded_h(self, flat: torch.Tensor) -> torch.Tensor:
        """K x N in dataset row order -> padded (P, K, N_max)."""
        safe = self.index.clamp_min(0)
        return flat[:, safe].transpose(0, 1) * self.mask[:, None, :]


def h_steps(x: torch.Tensor, w: torch.Tensor, h: torch.Tensor, c: float, steps: int,
            rho: float = RHO, nu: float = NU) -> torch.Tensor:
    """`steps` projected-gradient H steps (eq. (10)/(70)) on clients' columns side by side,
    all with the same W and step 1/c. x: (M, n), h: (K, n)."""
    wtw, wtx = w.T @ w, w.T @ x  # fixed over the steps since W is
    for _ in range(steps):
        h = h_step_gram(wtw, wtx, h, c, rho, nu)
    return h


def client_statistics(fed: Federation, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(H_p H_p^T, X_p H_p^T) for every client: (P, K, K) and (P, M, K). One product per client
    on its real columns: under power-law sizes a batched product over the padded blocks
    multiplies mostly zeros (0.24 s against ~0.01 s per call on p5_fmnist_ubls, measured)."""
    hs = [fed.client_h(h, p) for p in range(fed.num_clients)]
    ends = torch.cumsum(fed.sizes, dim=0).tolist()
    starts = [0, *ends[:-1]]
    xs = [fed.columns[:, a:b] for a, b in zip(starts, ends, strict=True)]
    return (torch.stack([h_p @ h_p.T for h_p in hs]),
            torch.stack([x_p @ h_p.T for x_p, h_p in zip(xs, hs, strict=True)]))


def fedcavg_w_steps(w: torch.Tensor, hht: torch.Tensor, xht: torch.Tensor,
                    weights: torch.Tensor, d: float, steps: int) -> torch.Tensor:
    """Eq. (12) for all clients at once: W_p <- W_p - grad_W F_p(W_p, H_p) / d, unprojected,
    with F_p = f_p / w_p, so grad_W F_p = (W_p H_p H_p^T - X_p H_p^T) / w_p. Returns (P, M, K)."""
    local = w.expand(hht.shape[0], *w.shape)
    scale = (1.0 / (weights * d))[:, None, None]
    for _ in range(steps):
        local = local - scale * grad_w(local, hht, xht)
    return local


def fedcgds_uploads(x: torch.Tensor, h_before: torch.Tensor,
                    h_after: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. (71) summed over the clients whose columns lie side by side in x (M x n) and h
    (K x n): sum_p U_p = H'H'^T - H H^T and sum_p V_p = X (H' - H)^T (the same as
    sum_p X_p H_p'^T - X_p H_p^T with one product instead of two)."""
    u = h_after @ h_after.T - h_before @ h_before.T
    v = x @ (h_after - h_before).T
    return u, v


# --- Plain per-client loops: the tests' reference for the batched functions above. ---


def reference_h_steps(xs: Sequence[torch.Tensor], w: torch.Tensor,
                      hs: Sequence[torch.Tensor], c: float, steps: int, rho: float = RHO,
                      nu: float = NU) -> list[torch.Tensor]:
    out = []
    for x_p, h_p in zip(xs, hs, strict=True):
        for _ in range(steps):
            h_p = h_step(x_p, w, h_p, c, rho, nu)
        out.append(h_p)
    return out


def reference_fedcavg_w_steps(xs: Sequence[torch.Tensor], w: torch.Tensor,
                              hs: Sequence[torch.Tensor], d: float,
                              steps: int) -> list[torch.Tensor]:
    total = sum(x_p.shape[1] for x_p in xs)
    out = []
    for x_p, h_p in zip(xs, hs, strict=True):
        weight = x_p.shape[1] / total
        w_p = w
        for _ in range(steps):
            w_p = w_p - (w_p @ h_p @ h_p.T - x_p @ h_p.T) / (weight * d)
        out.append(w_p)
    return out


def reference_fedcgds_uploads(xs: Sequence[torch.Tensor], hs_before: Sequence[torch.Tensor],
                              hs_after: Sequence[torch.Tensor]
                              ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [
        (h1 @ h1.T - h0 @ h0.T, x_p @ h1.T - x_p @ h0.T)
        for x_p, h0, h1 in zip(xs, hs_before, hs_after, strict=True)
    ]
