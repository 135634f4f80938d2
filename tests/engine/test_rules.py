"""Exact numbers for the update rules on tiny tensors, against hand-computed values.

The oracle is the quadratic f_c(w) = 1/2 ||w - a_c||^2 (gradient w - a_c), so every expected
value below can be checked with pen and paper.
"""

import pytest
import torch

from clusterfl.engine import Adam, MoreauEnvelope, Prox, Sgd
from clusterfl.engine.rules import descend_unfused_, shrink_and_pull_


class Quadratic:
    same_step = False  # a GradOracle's flag: nothing vouched, Adam checks its step counts

    def __init__(self, a: torch.Tensor) -> None:
        self.a = a
        self.calls = 0

    def grads(self, params):
        self.calls += 1
        return {"w": params["w"] - self.a}

    def descend_(self, params, lr, decay=0.0, anchor=None, pull=0.0):
        descend_unfused_(self, params, lr, decay, anchor, pull)


def w(*values: float) -> dict[str, torch.Tensor]:
    return {"w": torch.tensor(values, dtype=torch.float64).view(-1, 1)}


def test_sgd_step_with_weight_decay():
    p = w(1.0, 2.0)
    Sgd(lr=0.1, weight_decay=0.5).step_(p, {}, Quadratic(torch.zeros(2, 1)), None)
    # grad = w + 0.5 w = 1.5 w  ->  w (1 - 0.15)
    assert p["w"].flatten().tolist() == pytest.approx([0.85, 1.7])


def test_sgd_prox_uses_each_clients_weight_and_center():
    p = w(1.0, 1.0)
    prox = Prox(mu=2.0, center=w(3.0, 0.0), weight=torch.tensor([0.5, 1.0], dtype=torch.float64))
    Sgd(lr=0.1).step_(p, {}, Quadratic(torch.zeros(2, 1)), prox)
    # client 0: grad 1 + 2*0.5*(1-3) = -1 -> 1.1;  client 1: grad 1 + 2*1*(1-0) = 3 -> 0.7
    assert p["w"].flatten().tolist() == pytest.approx([1.1, 0.7])


def test_adam_two_steps_by_hand():
    p, rule, oracle = w(1.0), Adam(lr=0.1), Quadratic(torch.zeros(1, 1))
    state = rule.init_state(p)
    rule.step_(p, state, oracle, None)
    assert p["w"].item() == pytest.approx(0.9, abs=1e-7)  # first Adam step moves by lr
    rule.step_(p, state, oracle, None)
    # m = 0.18, v = 0.001809, m^ = 0.18/0.19, v^ = 0.001809/0.001999
    expected = 0.9 - 0.1 * (0.18 / 0.19) / ((0.001809 / 0.001999) ** 0.5 + 1e-8)
    # 1e-8: the hand computation rounds step one's 0.9 - 1e-9 (eps) to 0.9
    assert p["w"].item() == pytest.approx(expected, abs=1e-8)
    assert state["t"].tolist() == [2.0]


def test_adam_matches_torch_optim_adam_with_weight_decay():
    start, a = torch.tensor([[0.3, -1.2]], dtype=torch.float64), torch.tensor([[2.0, 0.5]])
    ref = start.clone().requires_grad_(True)
    opt = torch.optim.Adam([ref], lr=0.05, weight_decay=0.1)
    p, rule = {"w": start.clone()}, Adam(lr=0.05, weight_decay=0.1)
    state = rule.init_state(p)
    for _ in range(6):
        opt.zero_grad()
        (0.5 * ((ref - a) ** 2).sum()).backward()
        opt.step()
        rule.step_(p, state, Quadratic(a.double()), None)
    torch.testing.assert_close(p["w"], ref.detach(), rtol=0, atol=1e-12)


def test_moreau_envelope_two_batches_by_hand():
    rule = MoreauEnvelope(lr=0.5, personal_lr=0.1, lam=1.0, inner_steps=2)
    p, oracle = w(1.0), Quadratic(torch.zeros(1, 1))
    state = rule.init_state(p)
    rule.step_(p, state, oracle, None)
    # theta: 1 -> 0.9 -> 0.82;  w: 1 - 0.5*(1 - 0.82) = 0.91
    assert rule.personalized(state)["w"].item() == pytest.approx(0.82)
    assert p["w"].item() == pytest.approx(0.91)
    rule.step_(p, state, oracle, None)
    # theta carries over: 0.82 -> 0.747 -> 0.6886;  w: 0.91 - 0.5*(0.91 - 0.6886) = 0.7993
    assert rule.personalized(state)["w"].item() == pytest.approx(0.6886)
    assert p["w"].item() == pytest.approx(0.7993)
    assert oracle.calls == 4  # K gradient calls per batch


def test_moreau_envelope_mu_is_an_l2_term_on_theta():
    rule = MoreauEnvelope(lr=0.5, personal_lr=0.1, lam=1.0, inner_steps=1, mu=0.5)
    p = w(1.0)
    state = rule.init_state(p)
    rule.step_(p, state, Quadratic(torch.zeros(1, 1)), None)
    # theta = 1 - 0.1 * (1 + 0 + 0.5) = 0.85
    assert rule.personalized(state)["w"].item() == pytest.approx(0.85)


def test_moreau_envelope_rejects_an_extra_prox():
    rule = MoreauEnvelope(lr=0.5, personal_lr=0.1, lam=1.0)
    p = w(1.0)
    prox = Prox(1.0, w(0.0), torch.ones(1, dtype=torch.float64))
    with pytest.raises(ValueError, match="prox=None"):
        rule.step_(p, rule.init_state(p), Quadratic(torch.zeros(1, 1)), prox)


def test_shrink_and_pull_per_client():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    shrink_and_pull_(x, torch.tensor([0.5, 2.0]), torch.ones(2, 2), torch.tensor([1.0, -1.0]))
    assert x.tolist() == [[1.5, 2.0], [5.0, 7.0]]


def test_adam_fused_path_equals_the_per_client_formula():
    # Rows at the same step take the fused kernel, rows at different steps the formula path;
    # a row's update must not depend on which path its batch-mates sent it down.
    a = torch.tensor([[2.0, 0.5], [-1.0, 3.0]])
    rule = Adam(lr=0.05)
    both = {"w": torch.tensor([[0.3, -1.2], [0.7, 0.1]])}
    state = rule.init_state(both)
    state["m.w"] += torch.tensor([[0.1, -0.2], [0.3, 0.05]])
    state["v.w"] += torch.tensor([[0.02, 0.01], [0.04, 0.03]])
    state["t"] += torch.tensor([0.0, 3.0])  # different steps: the formula path
    rows = [({"w": both["w"][r:r + 1].clone()},
             {k: v[r:r + 1].clone() for k, v in state.items()}) for r in range(2)]
    for _ in range(2):
        rule.step_(both, state, Quadratic(a), None)
        for r, (p, st) in enumerate(rows):  # one row alone: uniform, the fused kernel
            rule.step_(p, st, Quadratic(a[r:r + 1]), None)
    for r, (p, _) in enumerate(rows):
        # float32: the two paths round the bias corrections differently (~1e-6)
        torch.testing.assert_close(both["w"][r:r + 1], p["w"], rtol=0, atol=5e-6)
    assert not torch.allclose(rows[0][0]["w"], rows[1][0]["w"])
