"""P5 model functions, checked against numbers worked out by hand."""

import math

import numpy as np
import pytest
import torch

from clusterfl.papers.p5.training import onmf

T = torch.float64


def tensor(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=T)


# X = [[1, 2], [3, 0]], W = diag(1, 2), H = [[1, 0], [1, 1]]: W H - X = [[0, -2], [-1, 2]].
X, W, H = tensor([[1, 2], [3, 0]]), tensor([[1, 0], [0, 2]]), tensor([[1, 0], [1, 1]])
RHO, NU = 0.5, 0.25


def test_objective_by_hand() -> None:
    # fit 1/2 (0 + 4 + 1 + 4) = 4.5; penalty 1/2 ((2^2 - 2) + (1 - 1)) = 1; norm 1/2 * 3 = 1.5
    parts = onmf.objective_parts(X, W, H)
    assert (parts.fit, parts.penalty, parts.norm) == (4.5, 1.0, 1.5)
    assert onmf.objective(X, W, H, RHO, NU) == 4.5 + 0.5 * 1.0 + 0.25 * 1.5


def test_federated_objective_weights_clients_by_their_share() -> None:
    # One column per client, w_p = 1/2: f_1 = 0.5 + 0.5 + 0.25 = 1.25, f_2 = 4 + 0 + 0.125,
    # F_p = f_p / w_p, and sum_p w_p F_p is F again.
    assert onmf.client_objective(X[:, :1], W, H[:, :1], 0.5, RHO, NU) == 2.5
    assert onmf.client_objective(X[:, 1:], W, H[:, 1:], 0.5, RHO, NU) == 8.25
    fed = onmf.federated_objective([X[:, :1], X[:, 1:]], W, [H[:, :1], H[:, 1:]], RHO, NU)
    assert fed == 5.375


def test_h_step_by_hand() -> None:
    # W^T (W H - X) = [[0, -2], [-2, 4]]; rho (1 1^T H - H) = 0.5 [[1, 1], [1, 0]];
    # nu H = 0.25 H: gradient [[0.75, -1.5], [-1.25, 4.25]]; H - gradient / 4, then H >= 0.
    gradient = onmf.grad_h(X, W, H, RHO, NU)
    assert torch.equal(gradient, tensor([[0.75, -1.5], [-1.25, 4.25]]))
    stepped = onmf.h_step(X, W, H, 4.0, RHO, NU)
    assert torch.equal(stepped, tensor([[0.8125, 0.375], [1.3125, 0.0]]))
    # the same step from W^T W = diag(1, 4) and W^T X = [[1, 2], [6, 0]], without X
    gram = onmf.h_step_gram(W.T @ W, W.T @ X, H, 4.0, RHO, NU)
    assert torch.equal(gram, tensor([[0.8125, 0.375], [1.3125, 0.0]]))


def test_w_step_by_hand() -> None:
    # M = 2, K = 3, N = 2. H H^T = [[1, 0, 1], [0, 1, 1], [1, 1, 2]], X H^T = [[2, 1, 3],
    # [0, 3, 3]], W H H^T = [[3, 2, 5], [-1, 0, -1]]: gradient [[1, 1, 2], [-1, -3, -4]].
    x, h = tensor([[2, 1], [0, 3]]), tensor([[1, 0], [0, 1], [1, 1]])
    w = tensor([[1, 0, 2], [0, 1, -1]])
    bounds = onmf.WBounds.of(x)
    assert (bounds.low, bounds.high) == (0.0, 3.0)
    assert torch.equal(onmf.grad_w(w, h @ h.T, x @ h.T), tensor([[1, 1, 2], [-1, -3, -4]]))
    # W - gradient / 2 = [[0.5, -0.5, 1], [0.5, 2.5, 1]], then clipped to [0, 3]
    stepped = onmf.w_step(w, h @ h.T, x @ h.T, 2.0, bounds)
    assert torch.equal(stepped, tensor([[0.5, 0.0, 1.0], [0.5, 2.5, 1.0]]))


def test_lipschitz_constants() -> None:
    # W^T W + rho (1 1^T - I) + nu I = [[1.25, 0.5], [0.5, 4.25]]: 2.75 +- sqrt(1.5^2 + 0.5^2)
    assert onmf.lipschitz_h(W, RHO, NU) == pytest.approx(2.75 + math.sqrt(2.5), rel=1e-14)
    assert onmf.lipschitz_w(H @ H.T) == pytest.approx((3 + math.sqrt(5)) / 2, rel=1e-14)


def test_projections_keep_w_in_its_box_and_h_nonnegative() -> None:
    gen = torch.Generator().manual_seed(0)
    w = 10 * torch.randn(5, 3, generator=gen, dtype=T)
    bounds = onmf.WBounds(-1.0, 2.0)
    projected = onmf.project_w(w, bounds)
    assert projected.min() == -1.0 and projected.max() == 2.0
    inside = (w >= -1) & (w <= 2)
    assert inside.any() and torch.equal(projected[inside], w[inside])
    h = onmf.project_h(torch.randn(3, 7, generator=gen, dtype=T))
    assert h.min() == 0.0 and (h > 0).any()


@pytest.mark.parametrize("seed", range(5))
def test_block_steps_never_increase_the_objective(seed: int) -> None:
    # rho large enough that dropping the penalty's curvature from c would be visible
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(6, 9, generator=gen, dtype=T)
    w = torch.rand(6, 3, generator=gen, dtype=T)
    h = torch.rand(3, 9, generator=gen, dtype=T)
    rho, nu, bounds = 0.3, 1e-3, onmf.WBounds.of(x)
    for _ in range(5):
        before = onmf.objective(x, w, h, rho, nu)
        h = onmf.h_step(x, w, h, 0.5 * onmf.lipschitz_h(w, rho, nu), rho, nu)
        middle = onmf.objective(x, w, h, rho, nu)
        w = onmf.w_step(w, h @ h.T, x @ h.T, 0.5 * onmf.lipschitz_w(h @ h.T), bounds)
        after = onmf.objective(x, w, h, rho, nu)
        assert middle <= before * (1 + 1e-12) and after <= middle * (1 + 1e-12)


def test_sncp_schedule() -> None:
    synthetic, mnist = onmf.SncpSchedule(), onmf.SncpSchedule(grow_tol=8e-5)
    assert onmf.relative_change(4.0, 3.0) == 0.25
    assert onmf.next_rho(1e-8, 1e-3, synthetic) == (1e-8, False)
    assert onmf.next_rho(1e-8, 1e-5, synthetic) == (1e-8 * 1.5, False)
    assert onmf.next_rho(1e-8, 5e-5, synthetic) == (1e-8, False)
    assert onmf.next_rho(1e-8, 5e-5, mnist) == (1e-8 * 1.5, False)
    assert onmf.next_rho(1e-8, 1e-9, synthetic) == (1e-8, True)


def test_labels_and_clustering_scores() -> None:
    h = tensor([[0.1, 0.9, 0.0], [0.5, 0.2, 0.0], [0.4, 0.0, 0.3]])
    assert onmf.labels_from_h(h).tolist() == [1, 0, 2]
    truth, predicted = np.array([0, 0, 1, 1, 2, 2]), np.array([1, 1, 0, 0, 0, 2])
    # best matching 1->0, 0->1, 2->2 gets 2 + 2 + 1 of 6 right
    assert onmf.clustering_accuracy(truth, predicted) == 5 / 6
    relabelled = onmf.clustering_scores(truth, (truth + 1) % 3)
    assert relabelled == {"accuracy": 1.0, "ari": 1.0, "nmi": 1.0}
    scores = onmf.clustering_scores(truth, predicted)
    assert 0 < scores["ari"] < 1 and 0 < scores["nmi"] < 1


def test_communication_cost_per_round() -> None:
    assert onmf.fedcavg_upload(features=7, clusters=3, clients=5) == 7 * 3 * 5
    assert onmf.fedcgds_upload(features=7, clusters=3, participants=2) == (21 + 9) * 2


def test_the_literal_step_without_penalty_curvature_can_increase_the_objective() -> None:
    # Why `lipschitz_h` keeps rho (1 1^T - I) + nu I: with c = 1/2 lambda_max(W^T W) alone,
    # as Sec. V writes it, an H step goes uphill once rho is no longer negligible.
    increases = 0
    for seed in range(5):
        gen = torch.Generator().manual_seed(seed)
        x = torch.rand(6, 9, generator=gen, dtype=T)
        w = torch.rand(6, 3, generator=gen, dtype=T)
        h = torch.rand(3, 9, generator=gen, dtype=T)
        literal_c = 0.5 * float(torch.linalg.eigvalsh(w.T @ w)[-1])
        for _ in range(5):
            stepped = onmf.h_step(x, w, h, literal_c, 0.3, 1e-3)
            increases += onmf.objective(x, w, stepped, 0.3, 1e-3) > onmf.objective(
                x, w, h, 0.3, 1e-3)
            h = stepped
    assert increases > 0
