"""The batched client computations equal a plain loop over clients (float64 tolerance)."""

import numpy as np
import pytest
import torch

from clusterfl.papers.p5.training import clients
from clusterfl.papers.p5.training.clients import Federation

SIZES = (3, 7, 1, 5)  # ragged on purpose
M, K = 6, 3


@pytest.fixture
def setup() -> tuple[Federation, list[torch.Tensor], torch.Tensor, list[torch.Tensor]]:
    rng = np.random.default_rng(0)
    rows = rng.uniform(0, 1, (sum(SIZES), M))
    order = rng.permutation(sum(SIZES))
    parts = np.split(order, np.cumsum(SIZES)[:-1])
    fed = Federation.from_parts(rows, parts)
    xs = [torch.as_tensor(rows[p].T) for p in parts]
    w = torch.as_tensor(rng.uniform(0, 1, (M, K)))
    hs = [torch.as_tensor(rng.uniform(0, 1, (K, n))) for n in SIZES]
    return fed, xs, w, hs


def unstack(fed: Federation, h: torch.Tensor) -> list[torch.Tensor]:
    return [fed.client_h(h, p) for p in range(fed.num_clients)]


def test_federation_layout(setup) -> None:
    fed, xs, _, hs = setup
    assert fed.x.shape == (4, M, max(SIZES)) and fed.sizes.tolist() == list(SIZES)
    assert torch.allclose(fed.weights, torch.tensor(SIZES, dtype=torch.float64) / sum(SIZES))
    for p, x_p in enumerate(xs):
        assert torch.equal(fed.client_x(p), x_p)
    padded = fed.stack_h(hs)
    assert torch.equal(fed.padded_h(fed.flat_h(padded)), padded)
    assert fed.x[~fed.mask.unsqueeze(1).expand_as(fed.x)].abs().sum() == 0


def test_h_steps_equal_the_per_client_loop(setup) -> None:
    fed, xs, w, hs = setup
    rho, nu, c = 0.05, 1e-3, 3.0
    batched = clients.h_steps(fed.x, fed.mask, w, fed.stack_h(hs), c, 7, rho, nu)
    looped = clients.reference_h_steps(xs, w, hs, c, 7, rho, nu)
    for got, want in zip(unstack(fed, batched), looped, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert (batched[~fed.mask.unsqueeze(1).expand_as(batched)] == 0).all()
    assert not torch.allclose(batched, fed.stack_h(hs))


def test_client_statistics_and_fedcavg_w_steps_equal_the_loop(setup) -> None:
    fed, xs, w, hs = setup
    hht, xht = clients.client_statistics(fed.x, fed.stack_h(hs))
    for p, (x_p, h_p) in enumerate(zip(xs, hs, strict=True)):
        torch.testing.assert_close(hht[p], h_p @ h_p.T, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(xht[p], x_p @ h_p.T, rtol=1e-12, atol=1e-12)
    d = 40.0
    batched = clients.fedcavg_w_steps(w, hht, xht, fed.weights, d, 4)
    looped = clients.reference_fedcavg_w_steps(xs, w, hs, d, 4)
    for p, want in enumerate(looped):
        torch.testing.assert_close(batched[p], want, rtol=1e-12, atol=1e-12)


def test_fedcgds_uploads_equal_the_loop(setup) -> None:
    fed, xs, w, hs = setup
    after = clients.reference_h_steps(xs, w, hs, 3.0, 2)
    u, v = clients.fedcgds_uploads(fed.x, fed.stack_h(hs), fed.stack_h(after))
    for p, (u_p, v_p) in enumerate(clients.reference_fedcgds_uploads(xs, hs, after)):
        torch.testing.assert_close(u[p], u_p, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(v[p], v_p, rtol=1e-12, atol=1e-12)
    assert u.shape == (4, K, K) and v.shape == (4, M, K) and u.abs().max() > 0
