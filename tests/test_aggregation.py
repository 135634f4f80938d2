import torch

from clusterfl.steps.aggregation import broadcast, gather, mix, scatter, weighted_average


def test_weighted_average_uses_sample_counts():
    stacked = {"w": torch.tensor([[1.0, 2.0], [3.0, 6.0]]), "b": torch.tensor([0.0, 4.0])}
    avg = weighted_average(stacked, torch.tensor([1, 3]))
    # (1*[1,2] + 3*[3,6]) / 4 = [2.5, 5.0]; (1*0 + 3*4) / 4 = 3
    assert torch.equal(avg["w"], torch.tensor([2.5, 5.0]))
    assert torch.equal(avg["b"], torch.tensor(3.0))


def test_mix_interpolates_with_beta():
    old, new = {"w": torch.tensor([0.0, 10.0])}, {"w": torch.tensor([4.0, 2.0])}
    assert torch.equal(mix(old, new, 0.25)["w"], torch.tensor([1.0, 8.0]))
    assert torch.equal(mix(old, new, 1.0)["w"], new["w"])


def test_broadcast_copies_are_independent():
    stacked = broadcast({"w": torch.tensor([1.0, 2.0])}, 3)
    assert stacked["w"].shape == (3, 2)
    stacked["w"][0, 0] = 9.0
    assert stacked["w"][1, 0] == 1.0


def test_gather_and_scatter_rows():
    stacked = {"w": torch.arange(6.0).view(3, 2)}
    rows = torch.tensor([2, 0])
    assert torch.equal(gather(stacked, rows)["w"], torch.tensor([[4.0, 5.0], [0.0, 1.0]]))
    out = scatter(stacked, rows, {"w": torch.tensor([[-1.0, -1.0], [-2.0, -2.0]])})
    assert torch.equal(out["w"], torch.tensor([[-2.0, -2.0], [2.0, 3.0], [-1.0, -1.0]]))
    assert stacked["w"][0, 0] == 0.0  # input untouched
