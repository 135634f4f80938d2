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


def test_selected_columns_lie_side_by_side_and_replace_only_the_selected(setup) -> None:
    fed, xs, _, hs = setup
    h = fed.stack_h(hs)
    chosen = torch.tensor([1, 3])
    torch.testing.assert_close(fed.selected_x(chosen), torch.cat([xs[1], xs[3]], dim=1),
                               rtol=0, atol=0)
    torch.testing.assert_close(fed.selected_x(torch.arange(4)), torch.cat(xs, dim=1),
                               rtol=0, atol=0)
    flat = fed.selected_h(h, chosen)
    assert torch.equal(flat, torch.cat([hs[1], hs[3]], dim=1))
    replaced = fed.replace_h(h, chosen, flat + 1.0)
    for p in range(4):
        want = hs[p] + 1.0 if p in (1, 3) else hs[p]
        assert torch.equal(fed.client_h(replaced, p), want)
    assert (replaced[~fed.mask.unsqueeze(1).expand_as(replaced)] == 0).all()


def test_h_steps_equal_the_per_client_loop(setup) -> None:
    fed, xs, w, hs = setup
    rho, nu, c = 0.05, 1e-3, 3.0
    everyone = torch.arange(4)
    flat = clients.h_steps(fed.selected_x(everyone), w, fed.selected_h(fed.stack_h(hs),
                                                                        everyone), c, 7, rho, nu)
    batched = fed.replace_h(fed.stack_h(hs), everyone, flat)
    looped = clients.reference_h_steps(xs, w, hs, c, 7, rho, nu)
    for got, want in zip(unstack(fed, batched), looped, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(batched, fed.stack_h(hs))


def test_client_statistics_and_fedcavg_w_steps_equal_the_loop(setup) -> None:
    fed, xs, w, hs = setup
    hht, xht = clients.client_statistics(fed, fed.stack_h(hs))
    for p, (x_p, h_p) in enumerate(zip(xs, hs, strict=True)):
        torch.testing.assert_close(hht[p], h_p @ h_p.T, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(xht[p], x_p @ h_p.T, rtol=1e-12, atol=1e-12)
    d = 40.0
    batched = clients.fedcavg_w_steps(w, hht, xht, fed.weights, d, 4)
    looped = clients.reference_fedcavg_w_steps(xs, w, hs, d, 4)
    for p, want in enumerate(looped):
        torch.testing.assert_close(batched[p], want, rtol=1e-12, atol=1e-12)


def test_fedcgds_uploads_equal_the_loop_summed_over_the_selected(setup) -> None:
    fed, xs, w, hs = setup
    after = clients.reference_h_steps(xs, w, hs, 3.0, 2)
    chosen = torch.tensor([0, 2, 3])
    u, v = clients.fedcgds_uploads(fed.selected_x(chosen),
                                   fed.selected_h(fed.stack_h(hs), chosen),
                                   fed.selected_h(fed.stack_h(after), chosen))
    pairs = clients.reference_fedcgds_uploads(xs, hs, after)
    torch.testing.assert_close(u, sum(pairs[p][0] for p in (0, 2, 3)), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(v, sum(pairs[p][1] for p in (0, 2, 3)), rtol=1e-12, atol=1e-12)
    assert u.shape == (K, K) and v.shape == (M, K) and u.abs().max() > 0
    left_out = sum(pairs[p][1] for p in (0, 1, 2, 3))
    assert not torch.allclose(v, left_out)
