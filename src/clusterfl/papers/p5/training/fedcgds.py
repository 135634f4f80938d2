"""FedCGds, P5 Algorithm 2 (Sec. IV-A): federated clustering by differential gradient sharing.

One round s: the server picks A^s, m of the P clients uniformly without replacement, and
broadcasts W^s; each chosen client takes Q1 projected steps on H_p (eq. (70)) and uploads
U_p = H_p' H_p'^T - H_p H_p^T and V_p = X_p H_p'^T - X_p H_p^T (eq. (71)); the others keep
H_p. The server adds the uploads to its running sums G1, G2 (eq. (72)) and takes Q2 projected
steps on W with the gradient W G1 - G2 (eqs. (73)-(74)).

Readings:
- Scaling of G1, G2: eq. (72) carries a factor 2/N from the paper's ||X - W H||^2 / N; with
  our F = 1/2 ||X - W H||^2 + R_H (see `onmf`) the gradient (69) is W sum_p H_p H_p^T -
  sum_p X_p H_p^T, so G1 = sum_p H_p H_p^T and G2 = sum_p X_p H_p^T with no factor.
- Line 1 of Algorithm 2 writes G1^0 with H_p^{s,Q1} in one factor, read as H_p^{0,Q1}: the
  clients' H after Q1 steps at W^0. `warm_steps = Q1` (`h_init: warm`) takes those steps
  before G1^0, G2^0 are built; `warm_steps = 0` (`h_init: random`, the earlier reading) builds
  them from the random H^0, which then dominates the objective until every client has been
  picked once (about 45 rounds at m = 10 of 100). Either way G1^0, G2^0 need one full upload
  from every client before round 1; Sec. V's cost (M K + K^2) m s leaves it out, `uploaded`
  counts it, since m = 10 and m = 100 pay it alike and leaving it out flatters the cheaper.
- Step sizes (Sec. V): c^s = 1/2 lambda_max(W^s^T W^s) (plus the penalty's curvature, see
  `onmf`), d^s = 1/2 lambda_max(H^{s,Q1} H^{s,Q1}^T) = 1/2 lambda_max(G1^s), which the server
  has without further uploads.
- Client choice: `selected` is an argument, so a round is a pure function; `sample_clients`
  draws it from an explicit generator.
"""

from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.papers.p5.training.clients import (
    Federation,
    client_statistics,
    fedcgds_uploads,
    h_steps,
)
from clusterfl.papers.p5.training.onmf import (
    NU,
    WBounds,
    fedcgds_upload,
    lipschitz_h,
    lipschitz_w,
    w_step,
)


@dataclass(frozen=True)
class FedCGdsState:
    w: torch.Tensor  # W^s (M x K)
    h: torch.Tensor  # the clients' H_p, stacked and padded (P, K, N_max)
    g1: torch.Tensor  # sum_p H_p H_p^T (K x K), the server's running sum
    g2: torch.Tensor  # sum_p X_p H_p^T (M x K)
    rho: float
    round: int = 0  # rounds completed
    uploaded: int = 0  # real numbers uploaded: G1^0, G2^0's, then rounds 1..round


def fedcgds_init(fed: Federation, w: torch.Tensor, h: torch.Tensor, rho: float,
                 nu: float = NU, warm_steps: int = 0) -> FedCGdsState:
    """Algorithm 2, line 1: the server's G1^0, G2^0 from every client's H_p, after
    `warm_steps` H steps at W^0 (0: the random H^0), and the one upload that costs."""
    if warm_steps:
        everyone = torch.arange(fed.num_clients, device=fed.x.device)
        c = 0.5 * lipschitz_h(w, rho, nu)
        warm = h_steps(fed.selected_x(everyone), w, fed.selected_h(h, everyone), c, warm_steps,
                       rho, nu)
        h = fed.replace_h(h, everyone, warm)
    hht, xht = client_statistics(fed, h)
    return FedCGdsState(w=w, h=h, g1=hht.sum(dim=0), g2=xht.sum(dim=0), rho=rho,
                        uploaded=fedcgds_upload(fed.features, w.shape[1], fed.num_clients))


def sample_clients(num_clients: int, m: int, rng: np.random.Generator) -> torch.Tensor:
    """A^s: m of the clients, uniformly without replacement (Sec. IV-B), in increasing order."""
    return torch.as_tensor(np.sort(rng.choice(num_clients, size=m, replace=False)))


def fedcgds_round(fed: Federation, state: FedCGdsState, selected: torch.Tensor,
                  bounds: WBounds, nu: float = NU, h_steps_per_round: int = 100,
                  w_steps_per_round: int = 100) -> FedCGdsState:
    selected = selected.to(fed.x.device)
    x, before = fed.selected_x(selected), fed.selected_h(state.h, selected)
    c = 0.5 * lipschitz_h(state.w, state.rho, nu)
    after = h_steps(x, state.w, before, c, h_steps_per_round, state.rho, nu)
    u, v = fedcgds_uploads(x, before, after)  # summed over the selected clients
    g1, g2 = state.g1 + u, state.g2 + v
    d = 0.5 * lipschitz_w(g1)
    w = state.w
    for _ in range(w_steps_per_round):
        w = w_step(w, g1, g2, d, bounds)
    h = fed.replace_h(state.h, selected, after)
    upload = fedcgds_upload(fed.features, w.shape[1], len(selected))
    return FedCGdsState(w=w, h=h, g1=g1, g2=g2, rho=state.rho, round=state.round + 1,
                        uploaded=state.uploaded + upload)
