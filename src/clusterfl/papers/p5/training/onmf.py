"""The orthogonal-NMF clustering model of P5 (Wang & Chang 2021, Sec. II and Sec. V, eq. (104))
and its projected-gradient block steps; float64 torch throughout.

X (M x N) holds samples as columns, W (M x K) the centroids, H (K x N) the soft assignments.
Every function here also accepts a leading batch axis on H and X (clients stacked, see
`clients.py`), because all of them act column by column on H.

Readings of the paper (each one a choice the text leaves open):
- Scaling. Eq. (2a)/(5) normalise the data term as ||X - W H||^2 / N, but the step sizes of
  Sec. V (c = 1/2 lambda_max(W^T W), d = lambda_max(H H^T)) are only of the order of the
  Lipschitz constants for the unnormalised f = 1/2 ||X - W H||_F^2 + R_H(H) (the scaling of the
  SNCP paper [16]); with the 1/N scaling they would be N/4 times too small. We therefore use
  F(W, H) = 1/2 ||X - W H||_F^2 + R_H(H), R_W = 0, and the client objective
  F_p = f_p / w_p with f_p = 1/2 ||X_p - W H_p||^2 + R_H(H_p) and w_p = N_p / N, so that
  sum_p w_p F_p = F exactly, as in eq. (4a).
- H step size. The H-block gradient of f_p is W^T (W H_p - X_p) + rho (1 1^T - I) H_p + nu H_p;
  its Lipschitz constant is L_H = lambda_max(W^T W + rho (1 1^T - I) + nu I). Sec. V writes
  c = 1/2 lambda_max(W^T W), dropping the penalty's curvature (at most rho (K - 1) + nu, about
  1e-7 at the start but growing with SNCP's rho). We keep it, c = 1/2 L_H, so that the
  descent lemma behind Theorems 1-3 (c >= L_H / 2, [39, Lemma 3.2]) holds for every rho and
  no block step can increase F. With rho, nu -> 0 it is the paper's formula.
- W step size. R_W = 0, so d = factor * lambda_max(H H^T) is exact: factor 1 for FedCAvg,
  1/2 for FedCGds (Sec. V, "Parameter setting").
- SNCP (Sec. V-D): eps = |F_s - F_{s-1}| / F_{s-1}, with both objectives evaluated at the
  current rho (so that a rho increase is not itself read as progress); stop when
  eps < 1e-8, else multiply rho by 1.5 when eps < tol (2e-5 synthetic, 8e-5 MNIST).
"""

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

RHO = 1e-8  # the penalty's starting value (Sec. V)
NU = 1e-10


@dataclass(frozen=True)
class WBounds:
    """The box of W: every entry in [min X, max X] (Sec. V, the set W)."""

    low: float
    high: float

    @classmethod
    def of(cls, x: torch.Tensor) -> "WBounds":
        return cls(float(x.min()), float(x.max()))


@dataclass(frozen=True)
class ObjectiveParts:
    """F = fit + rho * penalty + nu * norm, kept apart so that F can be read at any rho."""

    fit: float  # 1/2 ||X - W H||_F^2
    penalty: float  # 1/2 sum_j ((1^T h_j)^2 - ||h_j||^2)
    norm: float  # 1/2 ||H||_F^2

    def value(self, rho: float, nu: float = NU) -> float:
        return self.fit + rho * self.penalty + nu * self.norm


def objective_parts(x: torch.Tensor, w: torch.Tensor, h: torch.Tensor) -> ObjectiveParts:
    residual = x - w @ h
    return ObjectiveParts(
        fit=0.5 * float((residual**2).sum()),
        penalty=0.5 * float((h.sum(dim=-2) ** 2 - (h**2).sum(dim=-2)).sum()),
        norm=0.5 * float((h**2).sum()),
    )


def objective(x: torch.Tensor, w: torch.Tensor, h: torch.Tensor, rho: float = RHO,
              nu: float = NU) -> float:
    """F(W, H) = 1/2 ||X - W H||_F^2 + R_H(H)."""
    return objective_parts(x, w, h).value(rho, nu)


def client_objective(x_p: torch.Tensor, w: torch.Tensor, h_p: torch.Tensor, weight: float,
                     rho: float = RHO, nu: float = NU) -> float:
    """F_p = (1/2 ||X_p - W H_p||^2 + R_H(H_p)) / w_p, eq. (5) in our scaling."""
    return objective(x_p, w, h_p, rho, nu) / weight


def federated_objective(xs: list[torch.Tensor], w: torch.Tensor, hs: list[torch.Tensor],
                        rho: float = RHO, nu: float = NU) -> float:
    """sum_p w_p F_p with w_p = N_p / N, eq. (4a)."""
    total = sum(x_p.shape[1] for x_p in xs)
    weights = [x_p.shape[1] / total for x_p in xs]
    return sum(
        wt * client_objective(x_p, w, h_p, wt, rho, nu)
        for x_p, h_p, wt in zip(xs, hs, weights, strict=True)
    )


def penalty_gradient(h: torch.Tensor, rho: float, nu: float) -> torch.Tensor:
    """grad R_H = rho (1 1^T - I) H + nu H, column by column."""
    return rho * (h.sum(dim=-2, keepdim=True) - h) + nu * h


def grad_h(x: torch.Tensor, w: torch.Tensor, h: torch.Tensor, rho: float = RHO,
           nu: float = NU) -> torch.Tensor:
    """The H-block gradient of f: W^T (W H - X) + grad R_H(H)."""
    return w.T @ (w @ h - x) + penalty_gradient(h, rho, nu)


def grad_w(w: torch.Tensor, hht: torch.Tensor, xht: torch.Tensor) -> torch.Tensor:
    """The W-block gradient W H H^T - X H^T, from the two statistics clients can share (69)."""
    return w @ hht - xht


def lipschitz_h(w: torch.Tensor, rho: float = RHO, nu: float = NU) -> float:
    """lambda_max(W^T W + rho (1 1^T - I) + nu I): the H-block gradient's Lipschitz constant."""
    k = w.shape[1]
    eye = torch.eye(k, dtype=w.dtype, device=w.device)
    hessian = w.T @ w + rho * (torch.ones_like(eye) - eye) + nu * eye
    return float(torch.linalg.eigvalsh(hessian)[-1])


def lipschitz_w(hht: torch.Tensor) -> float:
    """lambda_max(H H^T): the W-block gradient's Lipschitz constant (R_W = 0)."""
    return float(torch.linalg.eigvalsh(hht)[-1])


def project_h(h: torch.Tensor) -> torch.Tensor:
    return h.clamp_min(0.0)


def project_w(w: torch.Tensor, bounds: WBounds) -> torch.Tensor:
    return w.clamp(bounds.low, bounds.high)


def h_step(x: torch.Tensor, w: torch.Tensor, h: torch.Tensor, c: float, rho: float = RHO,
           nu: float = NU) -> torch.Tensor:
    """One projected-gradient step on H, eq. (3a)/(10)/(70): P_H(H - grad_H f / c)."""
    return project_h(h - grad_h(x, w, h, rho, nu) / c)


def h_step_gram(wtw: torch.Tensor, wtx: torch.Tensor, h: torch.Tensor, c: float,
                rho: float = RHO, nu: float = NU) -> torch.Tensor:
    """`h_step` from W^T W (K x K) and W^T X (K x N) instead of X: the gradient
    W^T W H - W^T X + grad R_H(H) costs O(K^2 N) instead of O(M K N), and repeated steps at
    one W share the two products (no M x N residual is formed)."""
    return project_h(h - (wtw @ h - wtx + penalty_gradient(h, rho, nu)) / c)


def w_step(w: torch.Tensor, hht: torch.Tensor, xht: torch.Tensor, d: float,
           bounds: WBounds) -> torch.Tensor:
    """One projected-gradient step on W, eq. (3b)/(74): P_W(W - grad_W f / d)."""
    return project_w(w - grad_w(w, hht, xht) / d, bounds)


@dataclass(frozen=True)
class SncpSchedule:
    """Sec. V-D: rho x `growth` when eps < `grow_tol`; stop when eps < `stop_tol`."""

    grow_tol: float = 2e-5  # synthetic data; 8e-5 for MNIST
    stop_tol: float = 1e-8
    growth: float = 1.5


def relative_change(previous: float, current: float) -> float:
    """eps = |F_s - F_{s-1}| / F_{s-1} (Sec. V, "Parameter setting")."""
    return abs(current - previous) / abs(previous)


def next_rho(rho: float, eps: float, schedule: SncpSchedule) -> tuple[float, bool]:
    """(the next rho, whether to stop) after a round whose relative change was `eps`."""
    if eps < schedule.stop_tol:
        return rho, True
    if eps < schedule.grow_tol:
        return rho * schedule.growth, False
    return rho, False


def labels_from_h(h: torch.Tensor) -> np.ndarray:
    """Sample j joins the cluster of the largest entry of h_j."""
    return h.argmax(dim=0).cpu().numpy()


def clustering_accuracy(truth: np.ndarray, predicted: np.ndarray) -> float:
    """The share of samples labelled right under the best one-to-one label matching."""
    k = int(max(truth.max(), predicted.max())) + 1
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (predicted, truth), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / len(truth))


def clustering_scores(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    return {
        "accuracy": clustering_accuracy(truth, predicted),
        "ari": float(adjusted_rand_score(truth, predicted)),
        "nmi": float(normalized_mutual_info_score(truth, predicted)),
    }


def fedcavg_upload(features: int, clusters: int, clients: int) -> int:
    """Real numbers uploaded in one FedCAvg round: every client's W_p, M K P (Sec. V)."""
    return features * clusters * clients


def fedcgds_upload(features: int, clusters: int, participants: int) -> int:
    """Real numbers uploaded in one FedCGds round: (U_p, V_p) per participant, (M K + K^2) m."""
    return (features * clusters + clusters**2) * participants
