"""FedCAvg, P5 Algorithm 1 (Sec. III-A): federated clustering by model averaging.

One round s: the server has W^s = P_W(sum_p w_p W_p^{s-1,Q}) (eq. (9)); every client takes Q1
projected steps on H_p with W fixed (eq. (10)), then Q2 plain gradient steps on its own copy
W_p with H_p fixed (eq. (12), no projection), and uploads W_p; the server averages and
projects. All P clients take part in every round.

Readings:
- Step sizes (Sec. V): c^s = 1/2 lambda_max(W^s^T W^s) (plus the penalty's curvature, see
  `onmf`), the same for every client since W_p^{s,0} = W^s; d^s = lambda_max(H H^T) with H
  the *global* H^{s,Q1} = [H_1, ..., H_P] (the paper writes d^s and H without an index p).
  A client cannot know it; we compute it centrally, as a simulation of the paper's setting,
  and count no upload for it (Sec. V counts only W_p).
- Local W gradient: eq. (12) steps on F_p = f_p / w_p, whose gradient is
  (W_p H_p H_p^T - X_p H_p^T) / w_p; averaged over p with weights w_p it is the global
  gradient (eq. (24)). On non-i.i.d. clients lambda_max(H_p H_p^T) / w_p can exceed
  2 d^s, and the local steps then overshoot; that is the paper's rule, kept as written.
- Q2 = floor(Q-hat / s) + 1 (Theorem 2; Q-hat = 10 in Sec. V-D), where s is the round number
  of Algorithm 1 counted from 1 over the whole run; SNCP's rho increases do not restart it.
- The projection (9) is applied at the end of round s rather than the start of round s + 1;
  nothing happens in between, so the state carries the projected W^{s+1}.

Consequence (tested; measured in docs/p5.md): from round Q-hat + 1 on, Q2 = 1, and the
w_p-weighted average of one local step on F_p is one global step whatever the clients' H_p,
so FedCAvg at Sec. V-D's Q1 = 10, Q-hat = 10 is then centralized PALM with 10 H steps and a
single W step of size 1 / lambda_max(H H^T) per round, against FedCGds's 100 H and 100 W
steps of size 2 / lambda_max. Per round it moves the objective far less, SNCP's rho never
reaches its first increase within a few hundred rounds, and H stays a plain NMF factor.
"""

from dataclasses import dataclass

import torch

from clusterfl.papers.p5.training.clients import (
    Federation,
    client_statistics,
    fedcavg_w_steps,
    h_steps,
)
from clusterfl.papers.p5.training.onmf import (
    NU,
    WBounds,
    fedcavg_upload,
    lipschitz_h,
    lipschitz_w,
    project_w,
)


@dataclass(frozen=True)
class FedCAvgState:
    w: torch.Tensor  # W^s, the server's projected average (M x K)
    h: torch.Tensor  # the clients' H_p, stacked and padded (P, K, N_max)
    rho: float
    round: int = 0  # rounds completed
    uploaded: int = 0  # real numbers uploaded so far


def local_w_steps(q_hat: int, s: int) -> int:
    """Q2^s = floor(Q-hat / s) + 1, Theorem 2."""
    return q_hat // s + 1


def fedcavg_round(fed: Federation, state: FedCAvgState, bounds: WBounds, nu: float = NU,
                  h_steps_per_round: int = 10, q_hat: int = 10) -> FedCAvgState:
    s = state.round + 1
    c = 0.5 * lipschitz_h(state.w, state.rho, nu)
    everyone = torch.arange(fed.num_clients, device=fed.x.device)
    columns = h_steps(fed.columns, state.w, fed.selected_h(state.h, everyone), c,
                      h_steps_per_round, state.rho, nu)
    h = fed.replace_h(state.h, everyone, columns)
    hht, xht = client_statistics(fed, h)
    d = lipschitz_w(hht.sum(dim=0))
    local = fedcavg_w_steps(state.w, hht, xht, fed.weights, d, local_w_steps(q_hat, s))
    w = project_w((fed.weights[:, None, None] * local).sum(dim=0), bounds)
    upload = fedcavg_upload(fed.features, w.shape[1], fed.num_clients)
    return FedCAvgState(w=w, h=h, rho=state.rho, round=s, uploaded=state.uploaded + upload)
