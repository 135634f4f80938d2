"""Least-squares clients, Options 1 and 2, momentum (P4, Algorithm 2 lines 2-3)."""

from dataclasses import replace

import numpy as np
import torch

from clusterfl.papers.p4.training.momentum import (
    LinearClients,
    LocalUpdate,
    client_losses,
    cluster_losses,
    gradients,
    local_direction,
    sample_batches,
    stack_clients,
    update_momentum,
)


def hand_clients() -> LinearClients:
    """Client 0: A = I_2, y = (1, 2); client 1: one row A = (2, 0), y = 4 (zero-padded)."""
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
    y = np.array([1.0, 2.0, 4.0])
    return stack_clients(x, y, [np.array([0, 1]), np.array([2])])


def random_clients(seed: int = 0, clients: int = 5, n: int = 6, d: int = 3) -> LinearClients:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(clients, n, d, generator=g, dtype=torch.float64)
    y = torch.randn(clients, n, generator=g, dtype=torch.float64)
    return LinearClients(a, y, torch.full((clients,), n))


def test_losses_and_gradients_by_hand() -> None:
    data = hand_clients()
    assert data.counts.tolist() == [2, 1]
    params = torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    # client 0: residual (-1, -2), f = 5 / (2*2), grad = (-1, -2) / 2
    # client 1: residual 2 - 4 = -2, f = 4 / 2, grad = (2 * -2, 0) / 1
    assert client_losses(data, params).tolist() == [1.25, 2.0]
    assert gradients(data, params).tolist() == [[-0.5, -1.0], [-4.0, 0.0]]
    models = torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    assert cluster_losses(data, models).tolist() == [[1.25, 1.0], [8.0, 2.0]]


def test_gradient_is_the_autograd_gradient_of_the_loss() -> None:
    data = random_clients()
    params = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    client_losses(data, params).sum().backward()
    assert torch.allclose(gradients(data, params.detach()), params.grad, atol=1e-12)


def test_minibatch_gradient_and_sampling_stay_in_each_client() -> None:
    data = hand_clients()
    batch = sample_batches(data.counts, 50, torch.Generator().manual_seed(0))
    assert batch[1].max() == 0 and set(batch[0].tolist()) == {0, 1}
    params = torch.zeros(2, 2, dtype=torch.float64)
    rows = torch.tensor([[1, 1], [0, 0]])  # client 0 sees its 2nd sample twice
    assert gradients(data, params, rows).tolist() == [[0.0, -2.0], [-8.0, 0.0]]


def test_option2_with_one_step_is_option1_bit_for_bit() -> None:
    data = random_clients(1)
    params = torch.randn(5, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    for batch_size in (None, 2):
        one = LocalUpdate(lr=0.3, option=1, batch_size=batch_size)
        two = replace(one, option=2, local_steps=1)
        g1 = local_direction(data, params, one, torch.Generator().manual_seed(5))
        g2 = local_direction(data, params, two, torch.Generator().manual_seed(5))
        assert torch.equal(g1, g2)


def test_option2_is_the_displacement_over_eta() -> None:
    data = random_clients(3)
    params = torch.randn(5, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    lr = 0.05
    y = params
    for _ in range(3):
        y = y - lr * gradients(data, y)
    direction = local_direction(data, params, LocalUpdate(lr=lr, option=2, local_steps=3))
    assert torch.allclose(direction, (params - y) / lr, atol=1e-12)
    assert not torch.allclose(direction, 3 * gradients(data, params), atol=1e-3)


def test_momentum_is_a_moving_average_with_alpha_one_first() -> None:
    m = update_momentum(torch.tensor([4.0]), torch.tensor([2.0]), alpha=0.25)
    assert m.item() == 0.25 * 2.0 + 0.75 * 4.0
    update = LocalUpdate(alpha=0.25)
    assert (update.alpha_at(0), update.alpha_at(1)) == (1.0, 0.25)
    assert replace(update, first_round_alpha_one=False).alpha_at(0) == 0.25
