"""FedSoft: its named steps by exact numbers, its degenerate case (S = 1, lambda = 0) against
FedAvg and Local, and a small 10:90 run that must recover the true mixtures."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms import Schedule
from clusterfl.algorithms.fedsoft import (
    FedSoftHyper,
    aggregation_weights,
    fedsoft_prox,
    importance_weights,
    select_per_cluster,
)
from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options
from clusterfl.engine.rules import add_penalty_grads_, descend_unfused_
from clusterfl.steps.aggregation import weighted_average
from tests.algorithms.soft_problem import build, mixture_context, tiny_context

# Two centers, two clients; client 1 has 2 real samples of 4 (the rest is padding).
LOSSES = torch.tensor([
    [[1.0, 5.0, 2.0, 0.0], [9.0, 9.0, 0.0, 0.0]],  # center 0
    [[2.0, 1.0, 2.0, 3.0], [1.0, 1.0, 0.0, 0.0]],  # center 1
])
MASK = torch.tensor([[True, True, True, True], [True, True, False, False]])


def test_importance_weights_count_nearest_centers_with_the_smoother():
    u = importance_weights(LOSSES, MASK, sigma=0.01)
    # client 0: nearest centers 0, 1, 0 (a tie goes to 0), 0 -> 3/4, 1/4
    # client 1: both real samples nearest to center 1 -> max(0, sigma), 2/2; padding ignored
    torch.testing.assert_close(u, torch.tensor([[0.75, 0.25], [0.01, 1.0]]))


def test_aggregation_weights_are_u_times_n_normalised_per_cluster():
    u = torch.tensor([[0.75, 0.25], [0.01, 1.0]])
    v = aggregation_weights(u, torch.tensor([4, 2]))
    # u * n = [[3, 1], [0.02, 2]]; columns sum to 3.02 and 3
    expected = torch.tensor([[3 / 3.02, 1 / 3], [0.02 / 3.02, 2 / 3]])
    torch.testing.assert_close(v, expected)


def test_selection_inclusion_probabilities_without_replacement():
    v = torch.tensor([[0.5, 0.5], [0.3, 0.3], [0.2, 0.2]])
    rng = np.random.default_rng(0)
    draws = 3000  # frequencies within ~0.01 (one std); with replacement, or K * v_k, would
    counts = np.zeros(3)  # be off by >= 0.075 from the exact values below
    first = np.zeros(3)
    for _ in range(draws):
        sel_k2, sel_k1 = select_per_cluster(v, 2, rng)[0], select_per_cluster(v, 1, rng)[1]
        assert len(set(sel_k2.tolist())) == 2  # distinct clients
        counts[sel_k2] += 1
        first[sel_k1] += 1
    # K = 1: client k is selected with probability v_k
    np.testing.assert_allclose(first / draws, [0.5, 0.3, 0.2], atol=0.03)
    # K = 2, successive draws: P(k) = v_k + sum_{j != k} v_j v_k / (1 - v_j)
    exact = [0.5 + 0.3 * 0.5 / 0.7 + 0.2 * 0.5 / 0.8,  # 0.8392857
             0.3 + 0.5 * 0.3 / 0.5 + 0.2 * 0.3 / 0.8,  # 0.675
             0.2 + 0.5 * 0.2 / 0.5 + 0.3 * 0.2 / 0.7]  # 0.4857143
    np.testing.assert_allclose(counts / draws, exact, atol=0.03)


class _NoData:
    """A gradient oracle for f = 0, so only the proximal term moves the model."""

    def grads(self, params):
        return {k: torch.zeros_like(v) for k, v in params.items()}


def test_proximal_gradient_is_lambda_sum_u_times_distance_to_each_center():
    centers = {"w": torch.tensor([[1.0, 2.0], [3.0, -1.0]])}  # c_0, c_1
    u = torch.tensor([[0.25, 0.75]])
    prox = fedsoft_prox(centers, u, lam=2.0)
    torch.testing.assert_close(prox.weight, torch.tensor([1.0]))
    torch.testing.assert_close(prox.center["w"], torch.tensor([[2.5, -0.25]]))
    w = {"w": torch.zeros(1, 2)}
    grads = {"w": torch.zeros(1, 2)}
    add_penalty_grads_(grads, w, 0.0, prox)  # Adam's path
    # 2 * (0.25 * (0 - [1, 2]) + 0.75 * (0 - [3, -1])) = [-5, 0.5]
    torch.testing.assert_close(grads["w"], torch.tensor([[-5.0, 0.5]]))
    lr = 0.1  # SGD's fused path: w <- w - lr * gradient
    pull = lr * prox.mu * prox.weight
    descend_unfused_(_NoData(), w, lr, pull, prox.center, pull)
    torch.testing.assert_close(w["w"], torch.tensor([[0.5, -0.05]]))


SCHEDULE = Schedule(lr=0.05, rounds=3, epochs=2, batch_size=3, optimizer="adam")


def test_one_cluster_without_prox_is_fedavg_and_its_clients_are_local():
    """S = 1, lambda = 0, all clients: u = 1 and v_k = n_k / n, so c = FedAvg's average of the
    same local models (same seed: the clients' initial model is the run's first draw, and
    FedSoft draws no selection, so both use the same batch plans). FedSoft's clients keep
    their own models, so over rounds they are Local's models and c is their n-weighted mean.
    """
    one_round = Schedule(**{**SCHEDULE.__dict__, "rounds": 1})
    soft = build("fedsoft", tiny_context(one_round), num_clusters=1, lam=0.0)
    avg = build("fedavg", tiny_context(one_round))
    soft.run()
    avg.run()
    for k, v in avg.global_model.items():
        assert torch.equal(soft.centers()[k][0], v)
    assert torch.equal(soft.importance(), torch.ones(4, 1))

    soft = build("fedsoft", tiny_context(SCHEDULE), num_clusters=1, lam=0.0)
    local = build("local", tiny_context(SCHEDULE))
    soft.run()
    local.run()
    n = soft.train_sizes
    for k, v in local.models.items():
        assert torch.equal(soft.client_models()[k], v)
        assert torch.equal(soft.centers()[k][0], weighted_average(local.models, n)[k])


def test_with_prox_the_clients_differ_from_local_training():
    soft = build("fedsoft", tiny_context(SCHEDULE), num_clusters=1, lam=1.0)
    local = build("local", tiny_context(SCHEDULE))
    soft.run()
    local.run()
    k = next(iter(local.models))
    assert not torch.allclose(soft.client_models()[k], local.models[k])


def test_a_center_is_the_mean_of_its_selected_clients_models():
    """K = 1 per cluster: after one round at most S clients trained, and each center is
    exactly the returned model of one of them; nobody else moved."""
    schedule = Schedule(**{**SCHEDULE.__dict__, "rounds": 1})
    soft = build("fedsoft", tiny_context(schedule), num_clusters=2, selection_size=1)
    soft.setup()
    before = {k: v.clone() for k, v in soft.local.items()}
    soft.round(1, soft.select_clients(1))
    k = next(iter(before))
    moved = [c for c in range(4) if not torch.equal(soft.local[k][c], before[k][c])]
    assert 1 <= len(moved) <= 2
    for s in range(2):
        assert any(torch.equal(soft.centers()[k][s], soft.local[k][c]) for c in moved)


def test_small_10_90_run_recovers_the_true_mixtures():
    """20 clients (10 at 10:90, 10 at 90:10), K = 12, 15 rounds (~2 s)."""
    ctx = mixture_context(Schedule(lr=0.3, rounds=15, epochs=2, batch_size=10,
                                   optimizer="adam"))
    soft = build("fedsoft", ctx, num_clusters=2, selection_size=12, tau=2, lam=1.0)
    history = soft.run()
    last = history.records[-1]
    assert last["mixture_mae"] <= 0.05
    assert history.records[0]["mixture_mae"] > 0.1  # it was learnt, not given
    u = np.array(history.arrays["importance"][-1])
    match = history.arrays["center_of_distribution"][-1]
    estimated = u[:, match]  # columns in the order of the true distributions
    np.testing.assert_allclose(estimated, ctx.truth.mixture, atol=0.1)
    matrix = np.array(history.arrays["holdout_mse"][-1])  # [distribution, center]
    for d in range(2):  # each distribution is served best by its own center
        assert matrix[d, match[d]] < matrix[d, 1 - match[d]]
    assert last["holdout_best_mse"] == pytest.approx(matrix.min(axis=1).mean())
    assert {"train_mse", "test_mse", "local_train_mse", "local_test_mse"} <= last.keys()


def test_hyperparameters_are_validated():
    assert build_options(FedSoftHyper, {"selection_size": 60}, "a").selection_size == 60
    for bad in ({"sigma": 0.0}, {"tau": 0}, {"selection_size": 0}, {"lam": -1.0}):
        with pytest.raises(UserError):
            build_options(FedSoftHyper, bad, "algorithms.fedsoft")


def test_the_schedule_may_not_select_clients_for_fedsoft():
    schedule = Schedule(**{**SCHEDULE.__dict__, "clients_per_round": 2})
    with pytest.raises(ValueError, match="selection_size"):
        build("fedsoft", tiny_context(schedule)).run()


def test_schedule_init_picks_the_initialisation_of_every_model():
    def centers(init: str) -> torch.Tensor:
        ctx = tiny_context(Schedule(lr=0.01, rounds=1, epochs=1, optimizer="adam", init=init))
        alg = build("fedsoft", ctx, num_clusters=2, selection_size=None)
        alg.setup()
        return alg.cluster_models["1.weight"]  # linreg: [S, 1, 3]

    xavier, default = centers("xavier_normal"), centers("pytorch")
    assert default.abs().max() <= 3**-0.5  # U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in 3
    # N(0, 2 / (3 + 1)): some of the 6 draws leave the uniform's bound (seeded, so exact)
    assert xavier.abs().max() > 3**-0.5 and not torch.equal(xavier[0], xavier[1])
