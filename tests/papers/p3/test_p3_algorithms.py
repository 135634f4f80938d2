"""P3's algorithms on hand-built modality clusters: the rate selection against a known answer
and an independent computation, unimodal FL = FedAvg bit for bit, modalities kept apart."""

import copy

import numpy as np
import pytest
import torch
from torch.func import functional_call

from clusterfl.algorithms import NeuralContext, Schedule
from clusterfl.algorithms.fedavg import FedAvg, FedAvgHyper
from clusterfl.core.errors import UserError
from clusterfl.engine import ClientData, ReferenceEngine, Sgd, VectorizedEngine, make_plan
from clusterfl.engine.losses import sample_loss
from clusterfl.papers.p3.training.base import P3Hyper
from clusterfl.papers.p3.training.context import Modality, P3Context
from clusterfl.papers.p3.training.evaluator import ModalityEvaluator
from clusterfl.papers.p3.training.mmfl import MmFL
from clusterfl.papers.p3.training.model import P3Net, P3NetOptions
from clusterfl.papers.p3.training.standalone import Standalone
from clusterfl.papers.p3.training.steps import holdout_positions, modality_seed, restrict_plan
from clusterfl.steps.aggregation import broadcast

SCHEDULE = Schedule(rounds=3, lr=0.1, local_steps=3, batch_size=4)


def client_sets(rng: np.random.Generator, width: int, sizes: list[int], shift: float = 0.0):
    """Two-class data whose class is the sign of the first feature (learnable)."""
    out = []
    for n in sizes:
        x = rng.normal(size=(n, width)).astype(np.float32) + shift
        out.append((x, (x[:, 0] > shift).astype(np.int64)))
    return out


def modality(name: str, ids: list[int], width: int, rng: np.random.Generator,
             encoder: str = "mlp", shift: float = 0.0, sizes: tuple[int, ...] = (9, 12, 7)
             ) -> Modality:
    model = P3Net(width, 2, P3NetOptions(encoder=encoder, time_steps=width // 2, hidden=6,
                                         kernel_size=3))
    data = ClientData.from_lists(client_sets(rng, width, list(sizes[: len(ids)]), shift),
                                 client_sets(rng, width, [5] * len(ids), shift))
    return Modality(name, torch.tensor(ids), model, VectorizedEngine(model, data))


def context(mods: list[Modality], seed: int = 0, schedule: Schedule = SCHEDULE) -> P3Context:
    return P3Context(seed=seed, num_clients=sum(m.size for m in mods), rounds=schedule.rounds,
                     modalities=mods, schedule=schedule)


def test_one_rate_unimodal_with_sample_weights_is_fedavg_bit_for_bit() -> None:
    mod = modality("acc", [0, 1], 6, np.random.default_rng(0))
    for share in (False, True):  # one modality: the shared head is that modality's head
        alg = MmFL(P3Hyper(rates=(0.1,), share_head=share, server_weights="samples"),
                   context([mod], seed=4))
        fed_ctx = NeuralContext.build(mod.model, mod.engine, SCHEDULE, modality_seed(4, 0))
        fed = FedAvg(FedAvgHyper(), fed_ctx)
        alg.setup()
        fed.setup()
        for r in range(1, 4):
            alg.round(r, torch.arange(2))
            fed.round(r, torch.arange(2))
        expected = broadcast(fed.global_model, 2)
        assert all(torch.equal(alg.models[0][k], expected[k]) for k in expected)


def test_unimodal_clusters_ignore_each_other_shared_head_does_not() -> None:
    def run(shift: float, share: bool) -> dict[str, torch.Tensor]:
        rng = np.random.default_rng(1)
        a = modality("acc", [0, 2], 6, rng)
        b = modality("gyro", [1, 3], 8, np.random.default_rng(2), shift=shift)
        alg = MmFL(P3Hyper(rates=(0.1, 0.01), share_head=share), context([a, b]))
        alg.setup()
        for r in range(1, 3):
            alg.round(r, torch.arange(4))
        return alg.models[0]

    for share, same in ((False, True), (True, False)):
        one, other = run(0.0, share), run(3.0, share)
        assert all(torch.equal(one[k], other[k]) for k in one) is same


def test_rate_selection_picks_the_rate_that_learns() -> None:
    """1e-6 leaves the model as it is, 1e4 diverges, 0.5 lowers the held-out loss."""
    mod = modality("acc", [0, 1], 6, np.random.default_rng(5), sizes=(80, 100))
    alg = MmFL(P3Hyper(rates=(1e-6, 0.5, 1e4), temp_steps=20, holdout_fraction=0.3),
               context([mod], schedule=Schedule(rounds=1, lr=0.1, local_steps=1,
                                                batch_size=16)))
    alg.setup()
    losses = alg.held_out_losses(0, alg.models[0])
    assert (losses[1] < 0.5 * losses[0]).all()  # learned; 1e-6 did not
    alg.rngs[0] = np.random.default_rng(0)
    assert alg.select(0, alg.models[0]).tolist() == [1, 1]


@pytest.mark.parametrize("temp_data", ["rest", "subset"])
def test_held_out_losses_match_a_per_client_computation(temp_data: str) -> None:
    """The selection's losses against the reference engine and a hand-written loss on d."""
    mod = modality("acc", [0, 1], 6, np.random.default_rng(6))
    rates = (0.3, 0.03)
    alg = MmFL(P3Hyper(rates=rates, temp_steps=4, holdout_fraction=0.25, temp_data=temp_data),
               context([mod]))
    alg.setup()
    rng = copy.deepcopy(alg.rngs[0])
    got = alg.held_out_losses(0, alg.models[0])
    sizes = mod.engine.data.train_n.numpy()
    fit, fit_n, held, held_n = holdout_positions(sizes, 0.25, rng)
    positions, n = (fit, fit_n) if temp_data == "rest" else (held, held_n)
    plan = restrict_plan(make_plan(n.numpy(), SCHEDULE.batch_size, rng, local_steps=4),
                         positions)
    ref = ReferenceEngine(mod.model, mod.engine.data)
    data = mod.engine.data
    for r, rate in enumerate(rates):
        trained = ref.train(alg.models[0], torch.arange(2), Sgd(rate), plan)
        for c in range(2):
            rows = held[c, : held_n[c]]
            out = functional_call(mod.model, {k: v[c] for k, v in trained.items()},
                                  (data.train_x[c, rows],))
            want = sample_loss(out, data.train_y[c, rows]).mean()
            assert got[r, c].item() == pytest.approx(want.item(), rel=1e-5)


def test_selected_rates_are_recorded_per_client_in_run_order() -> None:
    a = modality("acc", [0, 3], 6, np.random.default_rng(1))
    b = modality("gyro", [1, 2], 8, np.random.default_rng(2))
    alg = MmFL(P3Hyper(rates=(1e-6, 0.5)), context([a, b]))
    alg.setup()
    alg.round(1, torch.arange(4))
    alg.selected = [torch.tensor([0, 1]), torch.tensor([1, 0])]  # a: clients 0, 3; b: 1, 2
    assert alg.round_arrays() == {"selected_lr": [1e-6, 0.5, 1e-6, 0.5]}
    metrics = alg.round_metrics()
    assert metrics["selected_lr_c3"] == 0.5 and metrics["selected_share_0.5"] == 0.5


def test_standalone_never_averages() -> None:
    mod = modality("acc", [0, 1], 6, np.random.default_rng(0))
    alg = Standalone(P3Hyper(rates=(0.1,)), context([mod]))
    alg.setup()
    alg.round(1, torch.arange(2))
    w = alg.models[0]["head.weight"]
    assert not torch.equal(w[0], w[1])


def test_conv_encoder_trains_the_same_under_vmap_and_the_reference_loop() -> None:
    mod = modality("acc", [0, 1], 12, np.random.default_rng(0), encoder="conv")
    start = broadcast({k: v.detach() for k, v in mod.model.named_parameters()}, 2)
    plan = make_plan(mod.engine.data.train_n.numpy(), 4, np.random.default_rng(0),
                     local_steps=3)
    fast = mod.engine.train(start, torch.arange(2), Sgd(0.1), plan)
    slow = ReferenceEngine(mod.model, mod.engine.data).train(start, torch.arange(2),
                                                             Sgd(0.1), plan)
    assert all(torch.allclose(fast[k], slow[k], atol=1e-6) for k in fast)


def test_evaluator_totals_are_sample_weighted_modalities() -> None:
    a = modality("acc", [0, 1], 6, np.random.default_rng(1))
    b = modality("gyro", [2], 8, np.random.default_rng(2))
    ctx = context([a, b])
    alg = MmFL(P3Hyper(rates=(0.1,)), ctx)
    alg.setup()
    got = ModalityEvaluator(ctx).evaluate(alg.view())
    n_a, n_b = a.engine.data.test_n.sum().item(), b.engine.data.test_n.sum().item()
    want = (got["test_acc_acc"] * n_a + got["test_acc_gyro"] * n_b) / (n_a + n_b)
    assert got["test_acc"] == pytest.approx(want)
    assert {"test_loss_acc", "test_loss_gyro", "train_acc", "train_loss"} <= set(got)


def test_per_modality_selection_takes_the_lowest_mean_loss_over_clients() -> None:
    from clusterfl.papers.p3.training.steps import select_modality_rate

    # client 0 prefers rate 1, clients 1-2 rate 0; the means are 2.0, 3.0 and +inf (rate 2
    # diverged on client 2): rate 0 for all
    losses = torch.tensor([[3.0, 1.0, 2.0], [1.0, 4.0, 4.0], [2.5, 2.5, float("nan")]])
    assert select_modality_rate(losses).tolist() == [0, 0, 0]
    with pytest.raises(UserError, match="select_per: must be client or modality"):
        P3Hyper(select_per="cohort").validate("algorithms.mmfl")


def test_eq8_averages_with_one_over_n_and_the_variant_by_sample_counts() -> None:
    from clusterfl.papers.p3.training.steps import server_step

    # two clients of one modality with 1 and 3 samples, parameters 0 and 4
    local = [{"enc.w": torch.tensor([[0.0], [4.0]]), "head.w": torch.tensor([[0.0], [4.0]])}]
    uniform = server_step(local, [torch.ones(2)], share_head=False)
    samples = server_step(local, [torch.tensor([1.0, 3.0])], share_head=False)
    assert uniform[0]["enc.w"].tolist() == [2.0] and samples[0]["enc.w"].tolist() == [3.0]


def test_step_9_scores_each_clients_local_model_before_the_server_step() -> None:
    mod = modality("acc", [0, 1], 6, np.random.default_rng(0))
    scored = {}
    for how in ("local", "global"):
        alg = MmFL(P3Hyper(rates=(0.1,), share_head=False, scored=how), context([mod], seed=4))
        alg.setup()
        alg.round(1, torch.arange(2))
        scored[how] = alg.view().extras["models"][0]
        if how == "global":
            assert scored[how] is alg.models[0]
    # the local models differ client by client; the server's output is one model broadcast
    local, glob = scored["local"], scored["global"]
    key = next(iter(local))
    assert not torch.equal(local[key][0], local[key][1])
    assert torch.equal(glob[key][0], glob[key][1])
    # and the server's output is the plain mean of the local ones (Eq. 8)
    torch.testing.assert_close(glob[key][0], local[key].mean(dim=0))
