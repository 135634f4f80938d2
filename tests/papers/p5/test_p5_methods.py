"""P5's algorithm classes through the shared round loop (`run()`) reproduce the pure round
functions; the evaluators' numbers by hand; communication counts in the history."""

import math

import numpy as np
import pytest
import torch

from clusterfl.core.errors import UserError
from clusterfl.papers import load_papers
from clusterfl.papers.p5.training import onmf
from clusterfl.papers.p5.training.context import central_x, federation_context
from clusterfl.papers.p5.training.evaluators import OnmfObjective, SampleClustering
from clusterfl.papers.p5.training.fedcavg import FedCAvgState, fedcavg_round
from clusterfl.papers.p5.training.fedcgds import fedcgds_init, fedcgds_round, sample_clients
from clusterfl.papers.p5.training.kmeans import kmeans_pp
from clusterfl.papers.p5.training.methods import CentralSncp, FedCAvg, FedCGds, KMeansPP
from clusterfl.papers.p5.training.methods.base import INIT_STREAM
from clusterfl.papers.p5.training.sncp import (
    CentralState,
    continuation,
    initial_point,
    sncp_iteration,
)
from clusterfl.training.loop import RunContext, View

load_papers()  # registers P5's algorithms, evaluators and metrics
M, K, SIZES, SEED = 6, 3, (5, 2, 7, 4), 3


def problem(rounds: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = [rng.uniform(-0.5, 2.0, (n, M)) for n in SIZES]
    labels = [rng.integers(0, K, n) for n in SIZES]
    base = RunContext(seed=SEED, num_clients=len(SIZES), rounds=rounds)
    return federation_context(base, rows, labels, K)


def start(ctx):
    """The common initial point every ONMF algorithm of seed SEED starts from."""
    fed = ctx.fed
    w, h = initial_point(M, K, sum(SIZES), ctx.bounds,
                         np.random.default_rng([INIT_STREAM, SEED]))
    return w, fed.padded_h(h)


def test_context_stacks_every_client_and_keeps_labels_in_order() -> None:
    ctx = problem(1)
    x = central_x(ctx.fed)
    assert x.shape == (M, sum(SIZES)) and len(ctx.labels) == sum(SIZES)
    assert ctx.data_norm == pytest.approx(float((x**2).sum()), rel=1e-12)
    assert (ctx.bounds.low, ctx.bounds.high) == (float(x.min()), float(x.max()))


def test_fedcgds_run_equals_its_round_function_with_the_same_clients() -> None:
    ctx = problem(4)
    hyper = FedCGds.Hyper(h_steps=3, w_steps=4, participants=2, continuation=False,
                          stop_tol=0.0)
    history = FedCGds(hyper, ctx).run()
    w, h = start(ctx)
    state, rng = fedcgds_init(ctx.fed, w, h, hyper.rho), np.random.default_rng(SEED)
    for record in history.records:
        chosen = sample_clients(len(SIZES), 2, rng)
        state = fedcgds_round(ctx.fed, state, chosen, ctx.bounds, hyper.nu, 3, 4)
        xs = [ctx.fed.client_x(p) for p in range(len(SIZES))]
        hs = [ctx.fed.client_h(state.h, p) for p in range(len(SIZES))]
        expected = onmf.federated_objective(xs, state.w, hs, hyper.rho, hyper.nu)
        assert record["objective"] == pytest.approx(expected, rel=1e-9)
        assert record["upload_floats_total"] == state.uploaded
    # G1^0, G2^0's upload from all 4 clients, then 2 clients a round
    assert state.round == 4 and state.uploaded == (4 + 4 * 2) * (M * K + K * K)


def test_fedcavg_run_equals_its_round_function() -> None:
    ctx = problem(3)
    hyper = FedCAvg.Hyper(h_steps=2, q_hat=3, continuation=False, stop_tol=0.0)
    history = FedCAvg(hyper, ctx).run()
    w, h = start(ctx)
    state = FedCAvgState(w, h, hyper.rho)
    for record in history.records:
        state = fedcavg_round(ctx.fed, state, ctx.bounds, hyper.nu, 2, 3)
        flat = ctx.fed.flat_h(state.h)
        expected = onmf.objective(central_x(ctx.fed), state.w, flat, hyper.rho, hyper.nu)
        assert record["objective"] == pytest.approx(expected, rel=1e-9)
        assert record["upload_floats"] == M * K * len(SIZES)


def pure_continuation(ctx, hyper, iterations: int):
    """[16]'s continuation run by itself from the algorithm's start, one PALM step at a time
    (grow_tol 0.5, stop_tol 1e-12, growth 3): (final state, trace)."""
    w, h = start(ctx)
    x = central_x(ctx.fed)
    return continuation(lambda s: sncp_iteration(x, s, ctx.bounds, hyper.nu),
                        lambda s: onmf.objective_parts(x, s.w, s.h),
                        CentralState(w, ctx.fed.flat_h(h), hyper.rho),
                        onmf.SncpSchedule(0.5, 1e-12, 3.0), iterations, hyper.nu)


def test_sncp_run_follows_the_pure_continuation_rho_for_rho() -> None:
    # grow_tol 0.5: rho grows in every round whose relative change is below 50%
    ctx = problem(6)
    hyper = CentralSncp.Hyper(grow_tol=0.5, stop_tol=1e-12, growth=3.0)
    history = CentralSncp(hyper, ctx).run()
    _, trace = pure_continuation(ctx, hyper, 6)
    assert [r["rho"] for r in history.records] == pytest.approx(trace.rho[1:], rel=1e-12)
    assert [r["objective"] for r in history.records] == pytest.approx(trace.objective[1:],
                                                                      rel=1e-9)
    assert len(set(trace.rho)) > 2  # the schedule did act
    assert all(r["upload_floats_total"] == 0 for r in history.records)


def test_sncp_rounds_of_several_iterations_read_the_schedule_after_each_iteration() -> None:
    # 4 rounds of 3 PALM iterations are the pure continuation's 12 iterations, rho for rho;
    # reading eps once per round (objectives 3 iterations apart) would grow rho less often
    ctx = problem(4)
    hyper = CentralSncp.Hyper(grow_tol=0.5, stop_tol=1e-12, growth=3.0, iterations=3)
    algorithm = CentralSncp(hyper, ctx)
    history = algorithm.run()
    state, trace = pure_continuation(ctx, hyper, 12)
    assert [r["rho"] for r in history.records] == pytest.approx(trace.rho[3::3], rel=1e-12)
    assert [r["objective"] for r in history.records] == pytest.approx(trace.objective[3::3],
                                                                      rel=1e-9)
    assert algorithm.state.rho == pytest.approx(state.rho, rel=1e-12)
    torch.testing.assert_close(algorithm.state.w, state.w)
    assert len(set(trace.rho[3::3])) > 2  # the schedule did act within rounds


def test_stop_rule_freezes_the_run_and_its_uploads() -> None:
    ctx = problem(3)
    hyper = FedCGds.Hyper(h_steps=1, w_steps=1, grow_tol=10.0, stop_tol=10.0)  # stops at once
    records = FedCGds(hyper, ctx).run().records
    per_round = (M * K + K * K) * len(SIZES)
    assert [r["upload_floats"] for r in records] == [per_round, 0, 0]
    assert [r["upload_floats_total"] for r in records] == [2 * per_round] * 3  # with G^0's
    assert [r["converged"] for r in records] == [1.0, 1.0, 1.0]
    assert records[1]["objective"] == records[2]["objective"] == records[0]["objective"]


def test_kmeanspp_is_a_one_round_run_scored_like_its_function() -> None:
    ctx = problem(50)
    records = KMeansPP(KMeansPP.Hyper(), ctx).run().records
    assert len(records) == 1
    x = central_x(ctx.fed)
    labels, _ = kmeans_pp(x.T.numpy(), K, np.random.default_rng(SEED))
    assert records[0]["clustering_accuracy"] == onmf.clustering_accuracy(ctx.labels, labels)
    sse = sum(float(((x[:, labels == k] - x[:, labels == k].mean(dim=1, keepdim=True)) ** 2)
                    .sum()) for k in range(K) if (labels == k).any())
    assert records[0]["objective"] == pytest.approx(0.5 * sse + onmf.NU * 0.5 * sum(SIZES),
                                                    rel=1e-9)
    assert records[0]["upload_floats_total"] == 0


def hand_context():
    """Two clients, one column each: X = [1 | 3] (M = 1), true labels [0, 1]."""
    base = RunContext(seed=0, num_clients=2, rounds=1)
    return federation_context(base, [np.array([[1.0]]), np.array([[3.0]])],
                              [np.array([0]), np.array([1])], 2)


def test_objective_evaluator_by_hand() -> None:
    # W = [2, 1], H = [[1, 1], [1, 0]]: WH = [3, 2], residual [-2, 1] -> fit 2.5; penalty
    # 1/2 ((2^2 - 2) + (1 - 1)) = 1; norm 1/2 * 3 = 1.5; F = 2.5 + 0.1 * 1 + 0.2 * 1.5 = 2.9
    ctx = hand_context()
    w = torch.tensor([[2.0, 1.0]], dtype=torch.float64)
    h = ctx.fed.padded_h(torch.tensor([[1.0, 1.0], [1.0, 0.0]], dtype=torch.float64))
    hht = torch.einsum("pkn,pln->kl", h, h)
    xht = torch.einsum("pmn,pkn->mk", ctx.fed.x, h)
    view = View(extras={"w": w, "h": h, "hht": hht, "xht": xht, "rho": 0.1, "nu": 0.2})
    assert OnmfObjective(ctx).evaluate(view)["objective"] == pytest.approx(2.9, rel=1e-12)


def test_clustering_evaluator_by_hand() -> None:
    # truth [0, 0, 1, 1, 1], found [1, 1, 0, 0, 1]: matching 1->0, 0->1 gets 4 of 5 right;
    # ARI (2 - 1.6) / (4 - 1.6) = 1/6; NMI = MI / H (both labellings have sizes 2 and 3)
    base = RunContext(seed=0, num_clients=1, rounds=1)
    ctx = federation_context(base, [np.zeros((5, 1))], [np.array([0, 0, 1, 1, 1])], 2)
    h = torch.tensor([[0, 0, 1, 1, 0], [1, 1, 0, 0, 1]], dtype=torch.float64)
    view = View(extras={"h": ctx.fed.padded_h(h)})
    scores = SampleClustering(ctx).evaluate(view)
    entropy = -(0.4 * math.log(0.4) + 0.6 * math.log(0.6))
    mi = 0.8 * math.log(1 / 0.6) + 0.2 * math.log(0.2 / 0.36)
    assert scores["clustering_accuracy"] == 0.8
    assert scores["clustering_ari"] == pytest.approx(1 / 6, rel=1e-12)
    assert scores["clustering_nmi"] == pytest.approx(mi / entropy, rel=1e-12)


def test_sncp_is_no_longer_fedcgds_with_every_client_but_its_twin_ablation_is() -> None:
    ctx = problem(4)
    fed = FedCGds(FedCGds.Hyper(h_steps=100, w_steps=100), ctx).run().records
    sncp = CentralSncp(CentralSncp.Hyper(), problem(4)).run().records
    twin = CentralSncp(CentralSncp.Hyper(h_steps=100, w_steps=100, step_factor=0.5),
                       problem(4)).run().records
    assert [r["objective"] for r in twin] == pytest.approx([r["objective"] for r in fed],
                                                           rel=1e-9)
    assert sncp[-1]["objective"] != pytest.approx(fed[-1]["objective"], rel=1e-6)


def test_warm_start_takes_q1_h_steps_at_w0_before_the_server_sums() -> None:
    from clusterfl.papers.p5.training.clients import client_statistics, h_steps

    ctx = problem(2)
    w, h = start(ctx)
    fed, rho = ctx.fed, FedCGds.Hyper().rho
    warm = fedcgds_init(fed, w, h, rho, onmf.NU, warm_steps=3)
    everyone = torch.arange(len(SIZES))
    c = 0.5 * onmf.lipschitz_h(w, rho, onmf.NU)
    expected = h_steps(fed.selected_x(everyone), w, fed.selected_h(h, everyone), c, 3, rho,
                       onmf.NU)
    torch.testing.assert_close(fed.selected_h(warm.h, everyone), expected, rtol=0, atol=0)
    hht, xht = client_statistics(fed, warm.h)
    torch.testing.assert_close(warm.g1, hht.sum(dim=0), rtol=0, atol=0)
    torch.testing.assert_close(warm.g2, xht.sum(dim=0), rtol=0, atol=0)
    assert warm.uploaded == fedcgds_init(fed, w, h, rho).uploaded == len(SIZES) * (M * K + K * K)
    runs = [FedCGds(FedCGds.Hyper(h_steps=3, participants=2, h_init=kind), problem(2)).run()
            for kind in ("random", "warm")]
    assert runs[0].records[0]["objective"] != runs[1].records[0]["objective"]
    with pytest.raises(UserError, match="h_init: must be random or warm"):
        FedCGds.Hyper(h_init="hot").validate("algorithms.fedcgds")
