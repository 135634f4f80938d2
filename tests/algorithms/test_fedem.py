"""FedEM: the E-step, M-step and server step by exact numbers, M = 1 against FedAvg,
unsampled clients, and a small 10:90 run that must recover the true mixtures."""

import math

import numpy as np
import pytest
import torch

from clusterfl.algorithms import Schedule
from clusterfl.algorithms.fedem import FedEMHyper, component_average, e_step, m_step
from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options
from tests.algorithms.soft_problem import build, mixture_context, tiny_context

LN3, LN4 = math.log(3.0), math.log(4.0)
# Two components, two clients of 2 and 1 real samples (padded to 3).
LOSSES = torch.tensor([
    [[0.0, LN3, 7.0], [0.0, 5.0, 5.0]],  # component 0
    [[LN3, 0.0, 7.0], [LN4, 5.0, 5.0]],  # component 1
])
MASK = torch.tensor([[True, True, False], [True, False, False]])
PI = torch.tensor([[0.25, 0.75], [0.5, 0.5]])


def test_e_step_responsibilities_by_hand():
    q = e_step(LOSSES, MASK, PI)
    # client 0, sample 0: 0.25 * 1 vs 0.75 / 3 -> (0.5, 0.5)
    #           sample 1: 0.25 / 3 vs 0.75 * 1 -> (0.1, 0.9)
    # client 1, sample 0: 0.5 * 1 vs 0.5 / 4 -> (0.8, 0.2); padding -> 0
    expected = torch.tensor([
        [[0.5, 0.1, 0.0], [0.8, 0.0, 0.0]],
        [[0.5, 0.9, 0.0], [0.2, 0.0, 0.0]],
    ])
    torch.testing.assert_close(q, expected)


def test_m_step_mixture_weights_are_mean_responsibilities():
    pi = m_step(e_step(LOSSES, MASK, PI), MASK)
    torch.testing.assert_close(pi, torch.tensor([[0.3, 0.7], [0.8, 0.2]]))


def test_server_step_counts_unsampled_clients_with_the_old_component():
    old = {"w": torch.tensor([[0.0], [10.0]])}  # M = 2 components
    # clients 0 and 2 of 3 were sampled (n = 1, 2, 3); rows m * C + i
    trained = {"w": torch.tensor([[1.0], [2.0], [11.0], [12.0]])}
    new = component_average(trained, old, torch.tensor([1, 2, 3]), torch.tensor([0, 2]))
    # component 0: (1 * 1 + 3 * 2 + 2 * 0) / 6; component 1: (1 * 11 + 3 * 12 + 2 * 10) / 6
    torch.testing.assert_close(new["w"], torch.tensor([[7 / 6], [67 / 6]]))
    everyone = component_average({"w": torch.tensor([[1.0], [2.0], [3.0]])}, {"w": old["w"][:1]},
                                 torch.tensor([1, 2, 3]), torch.tensor([0, 1, 2]))
    torch.testing.assert_close(everyone["w"], torch.tensor([[(1 + 4 + 9) / 6]]))


SCHEDULE = Schedule(lr=0.05, rounds=3, epochs=2, batch_size=3, optimizer="adam")


def test_one_component_is_fedavg():
    """M = 1: q = pi = 1, the weighted plan weighs every sample 1, and with every client
    sampled the server step is the n_k / n average; same seed, same plans."""
    em = build("fedem", tiny_context(SCHEDULE), num_components=1)
    avg = build("fedavg", tiny_context(SCHEDULE))
    em_history, avg_history = em.run(), avg.run()
    for k, v in avg.global_model.items():
        torch.testing.assert_close(em.centers()[k][0], v, rtol=1e-6, atol=1e-6)
    assert torch.equal(em.importance(), torch.ones(4, 1))
    assert em_history.records[-1]["test_mse"] == pytest.approx(
        avg_history.records[-1]["test_mse"], rel=1e-5)


def test_unsampled_clients_keep_their_mixture_weights():
    schedule = Schedule(**{**SCHEDULE.__dict__, "rounds": 1, "clients_per_round": 2})
    em = build("fedem", tiny_context(schedule), num_components=2)
    em.run()
    changed = (em.importance() != 0.5).any(dim=1)
    assert changed.sum().item() == 2  # the two sampled clients ran their E/M-step
    assert torch.equal(em.importance()[~changed], torch.full((2, 2), 0.5))


def test_local_model_is_the_component_with_the_largest_weight():
    em = build("fedem", tiny_context(SCHEDULE), num_components=2)
    em.run()
    best = em.importance().argmax(dim=1)
    for k, v in em.client_models().items():
        assert torch.equal(v, em.centers()[k][best])


def test_small_10_90_run_recovers_the_true_mixtures():
    ctx = mixture_context(Schedule(lr=0.3, rounds=15, epochs=2, batch_size=10,
                                   optimizer="adam"))
    history = build("fedem", ctx, num_components=2).run()
    assert history.records[0]["mixture_mae"] > 0.1
    assert history.records[-1]["mixture_mae"] <= 0.05
    matrix = np.array(history.arrays["holdout_mse"][-1])
    match = history.arrays["center_of_distribution"][-1]
    assert sorted(match) == [0, 1]
    for d in range(2):
        assert matrix[d, match[d]] < matrix[d, 1 - match[d]]


def test_hyperparameters_are_validated():
    with pytest.raises(UserError, match="num_components"):
        build_options(FedEMHyper, {"num_components": 0}, "algorithms.fedem")
