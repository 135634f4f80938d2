"""P5 round functions: FedCGds / FedCAvg with one client are centralized PALM step for step,
partial participation keeps the server's sums exact, SNCP's continuation, and clustering."""

import dataclasses
import time

import numpy as np
import pytest
import torch

from clusterfl.data.synthetic import FedcNmfOptions, fedc_nmf
from clusterfl.papers.p5.training import onmf
from clusterfl.papers.p5.training.clients import Federation
from clusterfl.papers.p5.training.fedcavg import FedCAvgState, fedcavg_round, local_w_steps
from clusterfl.papers.p5.training.fedcgds import fedcgds_init, fedcgds_round, sample_clients
from clusterfl.papers.p5.training.kmeans import kmeans_pp
from clusterfl.papers.p5.training.sncp import (
    CentralState,
    central_parts,
    continuation,
    initial_point,
    palm_iteration,
    sncp_iteration,
)

M, N, K = 8, 12, 3
RHO = 0.02  # well above the paper's 1e-8 so that the penalty terms are exercised


def one_client_problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = rng.uniform(-1, 2, (N, M))
    fed = Federation.from_parts(rows, [np.arange(N)])
    x = torch.as_tensor(rows.T)
    bounds = onmf.WBounds.of(x)
    w, h = initial_point(M, K, N, bounds, rng)
    return fed, x, bounds, w, h


def close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_fedcgds_with_one_client_is_centralized_palm_step_for_step() -> None:
    fed, x, bounds, w, h = one_client_problem()
    state = fedcgds_init(fed, w, fed.padded_h(h), RHO)
    central = CentralState(w, h, RHO)
    for _ in range(4):
        state = fedcgds_round(fed, state, torch.tensor([0]), bounds, h_steps_per_round=3,
                              w_steps_per_round=5)
        central = palm_iteration(x, central, bounds, h_steps=3, w_steps=5)
        close(state.w, central.w)
        close(fed.flat_h(state.h), central.h)
    assert not torch.allclose(central.w, w)


def test_fedcavg_with_one_client_and_one_w_step_is_centralized_palm() -> None:
    # Q-hat = 0 gives Q2 = 1, and one unprojected step followed by the server's projection is
    # one projected step; FedCAvg's d is lambda_max(H H^T), not half of it.
    fed, x, bounds, w, h = one_client_problem(1)
    assert_one_w_step_palm(fed, x, bounds, FedCAvgState(w, fed.padded_h(h), RHO),
                           CentralState(w, h, RHO), q_hat=0, rounds=4)


def test_fedcavg_after_round_q_hat_is_centralized_palm_with_one_w_step() -> None:
    # Past round Q-hat, Q2 = floor(Q-hat / s) + 1 = 1: the w_p-weighted average of one local
    # step on F_p = f_p / w_p is one global step, however different the clients' H_p (here
    # three ragged, disjoint clients). So Sec. V-D's FedCAvg (Q1 = 10, Q-hat = 10) is from
    # round 11 on centralized PALM with 10 H steps and ONE W step of size 1 / lambda_max(H H^T)
    # per round, where FedCGds takes 100 W steps of twice that size (docs/p5.md).
    rng = np.random.default_rng(3)
    rows = rng.uniform(-1, 2, (N, M))
    parts = [np.arange(0, 2), np.arange(2, 7), np.arange(7, N)]
    fed = Federation.from_parts(rows, parts)
    x = torch.as_tensor(rows.T)
    bounds = onmf.WBounds.of(x)
    w, h = initial_point(M, K, N, bounds, rng)
    assert_one_w_step_palm(fed, x, bounds,  # rounds 5.. with Q-hat = 4
                           FedCAvgState(w, fed.padded_h(h), RHO, round=4),
                           CentralState(w, h, RHO), q_hat=4, rounds=3)
    # Before round Q-hat, Q2 > 1 local steps on non-identical clients do not average to that.
    early = fedcavg_round(fed, FedCAvgState(w, fed.padded_h(h), RHO), bounds,
                          h_steps_per_round=3, q_hat=4)
    once = palm_iteration(x, CentralState(w, h, RHO), bounds, h_steps=3, w_steps=5,
                          d_factor=1.0)
    assert float((early.w - once.w).abs().max()) > 1e-3


def test_fedcavg_local_w_steps_are_unprojected_and_then_averaged() -> None:
    # With Q-hat = 5, round 1 takes Q2 = 6 plain gradient steps on W_p before projecting.
    fed, x, bounds, w, h = one_client_problem(2)
    w = 3 * w  # far outside the box, so a projection between steps would show
    state = fedcavg_round(fed, FedCAvgState(w, fed.padded_h(h), RHO), bounds,
                          h_steps_per_round=2, q_hat=5)
    c = 0.5 * onmf.lipschitz_h(w, RHO, onmf.NU)
    for _ in range(2):
        h = onmf.h_step(x, w, h, c, RHO, onmf.NU)
    d = onmf.lipschitz_w(h @ h.T)
    for _ in range(6):
        w = w - onmf.grad_w(w, h @ h.T, x @ h.T) / d
    close(state.w, onmf.project_w(w, bounds))
    assert state.round == 1 and state.uploaded == M * K * 1


def test_q2_schedule() -> None:
    assert [local_w_steps(10, s) for s in (1, 2, 3, 10, 11, 50)] == [11, 6, 4, 2, 1, 1]


def test_fedcgds_partial_participation_keeps_the_server_sums_exact() -> None:
    rng = np.random.default_rng(3)
    rows = rng.uniform(0, 1, (40, M))
    parts = np.split(rng.permutation(40), [5, 11, 20, 22, 30])  # 6 clients, ragged
    fed = Federation.from_parts(rows, parts)
    bounds = onmf.WBounds.of(fed.x)
    w, h = initial_point(M, K, 40, bounds, rng)
    state = fedcgds_init(fed, w, fed.padded_h(h), RHO)
    choice = np.random.default_rng(7)
    for _ in range(3):
        selected = sample_clients(6, 2, choice)
        new = fedcgds_round(fed, state, selected, bounds, h_steps_per_round=4,
                            w_steps_per_round=4)
        changed = [p for p in range(6) if not torch.equal(new.h[p], state.h[p])]
        assert changed == selected.tolist()
        state = new
    hht = state.h @ state.h.transpose(1, 2)
    close(state.g1, hht.sum(0))
    close(state.g2, (fed.x @ state.h.transpose(1, 2)).sum(0))
    # G1^0, G2^0's upload from every client, then 2 clients in each of 3 rounds
    assert state.uploaded == (fed.num_clients + 3 * 2) * (M * K + K * K)
    first, second = np.random.default_rng(7), np.random.default_rng(7)
    draws = [sample_clients(6, 2, first).tolist() for _ in range(3)]
    assert draws == [sample_clients(6, 2, second).tolist() for _ in range(3)]
    assert len({tuple(d) for d in draws}) > 1


@dataclasses.dataclass(frozen=True)
class Scripted:
    """A fake run whose data term follows a script, to watch the rho schedule alone."""

    rho: float
    t: int = 0


def test_continuation_grows_rho_and_reads_eps_at_the_current_rho() -> None:
    fits = [2.0, 1.0, 1.00001, 1.00001, 1.00001]
    penalty = 1e3  # large: reading eps across two rhos would move F by 0.5e-8 * 1e3

    def parts(s: Scripted) -> onmf.ObjectiveParts:
        return onmf.ObjectiveParts(fit=fits[s.t], penalty=penalty, norm=0.0)

    state, trace = continuation(lambda s: dataclasses.replace(s, t=s.t + 1), parts,
                                Scripted(1e-8), onmf.SncpSchedule(), max_rounds=4)
    # round 1: eps ~ 0.5; round 2: eps ~ 1e-5 < 2e-5, rho x 1.5; round 3: eps = 0, stop
    assert trace.converged and state.t == 3
    assert trace.rho == [1e-8, 1e-8, 1e-8, 1e-8 * 1.5]
    assert state.rho == 1e-8 * 1.5
    _, capped = continuation(lambda s: dataclasses.replace(s, t=s.t + 1), parts,
                             Scripted(1e-8), onmf.SncpSchedule(stop_tol=0.0), max_rounds=4)
    assert not capped.converged and len(capped.objective) == 5


def test_kmeans_pp_baseline_on_separated_blobs() -> None:
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 20)
    rows = 10 * np.eye(3)[truth] + rng.normal(0, 0.1, (60, 3))
    labels, seconds = kmeans_pp(rows, 3, np.random.default_rng(1))
    assert onmf.clustering_accuracy(truth, labels) == 1.0 and seconds >= 0
    assert np.array_equal(labels, kmeans_pp(rows, 3, np.random.default_rng(1))[0])


@pytest.mark.parametrize("participants", [10, 5])
def test_fedcgds_clusters_a_well_separated_synthetic_set(participants: int) -> None:
    rng = np.random.default_rng(0)
    data = fedc_nmf(FedcNmfOptions(features=50, samples=400, clusters=4, snr_db=10.0), rng)
    parts = np.array_split(rng.permutation(400), 10)
    fed = Federation.from_parts(data.x.astype(np.float64), parts)
    bounds = onmf.WBounds.of(fed.x)
    w, h = initial_point(50, 4, 400, bounds, rng)
    choice = np.random.default_rng(1)

    def advance(state):
        return fedcgds_round(fed, state, sample_clients(10, participants, choice), bounds)

    start = time.perf_counter()
    state, trace = continuation(
        advance, lambda s: onmf.objective_parts(fed.x, s.w, s.h),
        fedcgds_init(fed, w, fed.padded_h(h), onmf.RHO), onmf.SncpSchedule(), max_rounds=1000)
    labels = onmf.labels_from_h(fed.flat_h(state.h))
    assert onmf.clustering_accuracy(data.y, labels) >= 0.95
    assert trace.converged and max(trace.rho) > onmf.RHO
    assert time.perf_counter() - start < 30


def test_central_parts_equal_the_residual_objective() -> None:
    _, x, _, w, h = one_client_problem(2)
    parts, direct = central_parts(x, float((x**2).sum()), CentralState(w, h, RHO)), \
        onmf.objective_parts(x, w, h)
    assert parts.fit == pytest.approx(direct.fit, rel=1e-12)
    assert (parts.penalty, parts.norm) == (direct.penalty, direct.norm)


def test_sncp_iteration_is_one_palm_step_on_h_then_on_w_at_one_over_l() -> None:
    # Readings of `sncp`: [16]'s PALM, one H step at 1/L_H(W), then one W step at
    # 1/lambda_max(H H^T) of the new H, computed here from the plain gradients.
    _, x, bounds, w, h = one_client_problem(3)
    got = sncp_iteration(x, CentralState(w, h, RHO), bounds)
    h1 = onmf.project_h(h - onmf.grad_h(x, w, h, RHO, onmf.NU) / onmf.lipschitz_h(w, RHO))
    hht = h1 @ h1.T
    w1 = onmf.project_w(w - onmf.grad_w(w, hht, x @ h1.T) / onmf.lipschitz_w(hht), bounds)
    close(got.h, h1)
    close(got.w, w1)
    # the earlier reading (FedCGds's 100 + 100 block steps at 2/L) is another iteration
    twin = palm_iteration(x, CentralState(w, h, RHO), bounds, h_steps=100, w_steps=100)
    assert not torch.allclose(got.h, twin.h)


def test_sncp_clusters_a_well_separated_set_under_the_rho_schedule() -> None:
    # 100 iterations: the accuracy is reached long before eps < 1e-8 (the penalty's last
    # non-orthogonal entries fade slowly at large rho), so the stop rule is not asserted.
    rng = np.random.default_rng(0)
    data = fedc_nmf(FedcNmfOptions(features=50, samples=400, clusters=4, snr_db=10.0), rng)
    x = torch.as_tensor(data.x.T.copy(), dtype=torch.float64)
    bounds = onmf.WBounds.of(x)
    w, h = initial_point(50, 4, 400, bounds, rng)
    norm = float((x**2).sum())
    state, trace = continuation(lambda s: sncp_iteration(x, s, bounds),
                                lambda s: central_parts(x, norm, s),
                                CentralState(w, h, onmf.RHO), onmf.SncpSchedule(), 100)
    assert max(trace.rho) > 1e3 * onmf.RHO  # the schedule acted
    assert all(b <= a for a, b in zip(trace.objective[:30], trace.objective[1:31], strict=True))
    assert onmf.clustering_accuracy(data.y, onmf.labels_from_h(state.h)) >= 0.95


def assert_one_w_step_palm(fed, x, bounds, state, central, q_hat: int, rounds: int) -> None:
    """FedCAvg rounds (3 H steps each) equal centralized PALM with 3 H steps and one W step of
    size 1 / lambda_max(H H^T), round after round."""
    for _ in range(rounds):
        state = fedcavg_round(fed, state, bounds, h_steps_per_round=3, q_hat=q_hat)
        central = palm_iteration(x, central, bounds, h_steps=3, w_steps=1, d_factor=1.0)
        close(state.w, central.w)
        close(fed.flat_h(state.h), central.h)
