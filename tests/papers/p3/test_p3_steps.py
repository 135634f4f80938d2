"""P3's pure steps on hand-made tensors: exact numbers."""

import numpy as np
import torch

from clusterfl.engine import BatchPlan, ClientData
from clusterfl.papers.p3.training.steps import (
    held_out_data,
    holdout_positions,
    modality_seed,
    rate_columns,
    restrict_plan,
    select_rates,
    server_step,
)


def test_select_rates_argmin_nan_as_inf_ties_first() -> None:
    nan, inf = float("nan"), float("inf")
    losses = torch.tensor([[0.5, nan, 2.0, nan],
                           [0.3, 1.0, 2.0, nan],
                           [0.3, 0.2, inf, nan]])
    assert select_rates(losses).tolist() == [1, 2, 0, 0]


def _two_modalities() -> tuple[list[dict[str, torch.Tensor]], list[torch.Tensor]]:
    m0 = {"enc.w": torch.tensor([[1.0], [3.0]]), "head.w": torch.tensor([[2.0], [4.0]])}
    m1 = {"enc.w": torch.tensor([[10.0], [20.0]]), "head.w": torch.tensor([[6.0], [8.0]])}
    return [m0, m1], [torch.tensor([1, 3]), torch.tensor([2, 2])]


def test_server_step_unshared_averages_inside_each_modality() -> None:
    local, sizes = _two_modalities()
    new = server_step(local, sizes, share_head=False)
    assert new[0]["enc.w"].tolist() == [2.5] and new[0]["head.w"].tolist() == [3.5]
    assert new[1]["enc.w"].tolist() == [15.0] and new[1]["head.w"].tolist() == [7.0]


def test_server_step_shares_the_head_only() -> None:
    local, sizes = _two_modalities()
    new = server_step(local, sizes, share_head=True)
    # head: (2*1 + 4*3 + 6*2 + 8*2) / 8 over all four clients; encoders per modality
    assert new[0]["head.w"].tolist() == [5.25] and new[1]["head.w"].tolist() == [5.25]
    assert new[0]["enc.w"].tolist() == [2.5] and new[1]["enc.w"].tolist() == [15.0]


def test_encoders_never_mix_modalities() -> None:
    local, sizes = _two_modalities()
    local[1]["enc.w"] = torch.tensor([[1000.0], [-7.0]])
    for share in (False, True):
        assert server_step(local, sizes, share)[0]["enc.w"].tolist() == [2.5]


def test_holdout_positions_split_each_client() -> None:
    fit, fit_n, held, held_n = holdout_positions(np.array([5, 10, 1]), 0.2,
                                                 np.random.default_rng(3))
    assert held_n.tolist() == [1, 2, 0] and fit_n.tolist() == [4, 8, 1]
    for c, n in enumerate([5, 10, 1]):
        both = held[c, : held_n[c]].tolist() + fit[c, : fit_n[c]].tolist()
        assert sorted(both) == list(range(n))


def test_restrict_plan_maps_positions_and_rate_columns_select() -> None:
    plan = BatchPlan(torch.tensor([[[0, 2], [1, 0]]]), torch.tensor([[[True, True],
                                                                      [True, False]]]))
    mapped = restrict_plan(plan, torch.tensor([[7, 8, 9], [4, 5, 0]]))
    assert mapped.index.tolist() == [[[7, 9], [5, 4]]]
    assert torch.equal(mapped.mask, plan.mask)
    assert rate_columns(mapped, torch.tensor([1])).index.tolist() == [[[5, 4]]]


def test_held_out_data_is_the_test_split() -> None:
    x = torch.arange(12.0).view(2, 3, 2)
    y = torch.tensor([[0, 1, 2], [3, 4, 5]])
    data = ClientData(x, y, torch.tensor([3, 2]), x[:, :1], y[:, :1], torch.tensor([1, 1]))
    held = held_out_data(data, torch.tensor([[2, 0], [1, 0]]), torch.tensor([2, 1]))
    assert held.test_y.tolist() == [[2, 0], [4, 3]] and held.test_n.tolist() == [2, 1]
    assert held.test_x[0, 0].tolist() == [4.0, 5.0]


def test_modality_seeds_differ() -> None:
    assert len({modality_seed(s, m) for s in range(3) for m in range(3)}) == 9
