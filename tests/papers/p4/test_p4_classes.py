"""P4 run classes: through `FederatedAlgorithm.run()` they reproduce the pure round functions,
the evaluator's number by hand, PFL-TC's recovery through the class, the report's tables."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from clusterfl.data.synthetic import ThresholdRegressionOptions, threshold_regression
from clusterfl.loop import GroundTruth, View
from clusterfl.papers.p4 import IfcaLinear, OptimumError, Oracle, PdlTc, PflTc, Standalone
from clusterfl.papers.p4.training.ifca_linear import IfcaHyper
from clusterfl.papers.p4.training.linear import ClusterHyper, StepHyper, linear_context
from clusterfl.papers.p4.training.rounds import (
    ifca_initial_state,
    ifca_round,
    initial_state,
    model_error,
    oracle_round,
    pdl_tc_round,
    pfl_tc_round,
    standalone_round,
)
from clusterfl.partition.schemes import NaturalOptions, natural


def run_inputs(samples: int, seed: int = 0, per_cluster: int = 3, rounds: int = 4):
    opts = ThresholdRegressionOptions(clients_per_cluster=per_cluster, samples_per_client=samples,
                                      dimension=4)
    dataset = threshold_regression(opts, np.random.default_rng(0))
    partition = natural(dataset, NaturalOptions(), np.random.default_rng(1))
    schedule = SimpleNamespace(rounds=rounds, clients_per_round=None)
    return SimpleNamespace(experiment=SimpleNamespace(name="t", schedule=schedule),
                           dataset=dataset, partition=partition, seed=seed, device="cpu")


def test_context_joins_every_sample_and_keeps_the_optima() -> None:
    ctx = linear_context(run_inputs(samples=9))
    assert ctx.data.counts.tolist() == [9] * 12  # train (7) and test (2) joined
    assert ctx.truth.extras["optima"].shape == (4, 4)


@pytest.mark.parametrize("cls", [PflTc, PdlTc, Standalone, Oracle])
def test_momentum_classes_reproduce_the_round_functions(cls) -> None:
    run = run_inputs(samples=20)
    ctx = cls.make_context(run)
    hyper = (ClusterHyper if cls in (PflTc, PdlTc) else StepHyper)(init_scale=3.0, alpha=0.7)
    history = cls(hyper, ctx).run()
    g = torch.Generator().manual_seed(run.seed)
    state = initial_state(12, 4, g, scale=3.0)
    errors = []
    for _ in range(4):
        if cls is PflTc:
            state = pfl_tc_round(ctx.data, state, hyper.update, hyper.clustering, g)
        elif cls is PdlTc:
            state = pdl_tc_round(ctx.data, state, hyper.update, hyper.clustering, g)
        elif cls is Oracle:
            state = oracle_round(ctx.data, state, hyper.update, ctx.cluster, g)
        else:
            state = standalone_round(ctx.data, state, hyper.update, g)
        errors.append(model_error(state.params, torch.as_tensor(ctx.truth.extras["optima"]),
                                  ctx.cluster).item())
    assert [r["optimum_error"] for r in history.records] == pytest.approx(errors, rel=1e-12)
    assert ("ari" in history.records[-1]) == (cls in (PflTc, Oracle))


@pytest.mark.parametrize("variant", ["model", "gradient"])
def test_ifca_class_reproduces_ifca_round(variant: str) -> None:
    run = run_inputs(samples=20)
    ctx = IfcaLinear.make_context(run)
    hyper = IfcaHyper(variant=variant, local_steps=3)
    history = IfcaLinear(hyper, ctx).run()
    g = torch.Generator().manual_seed(run.seed)
    state = ifca_initial_state(ctx.data, 4, g)
    for _ in range(4):
        state = ifca_round(ctx.data, state, hyper.update, variant, g)
    optima = torch.as_tensor(ctx.truth.extras["optima"])
    assert history.records[-1]["optimum_error"] == pytest.approx(
        model_error(state.client_params, optima, ctx.cluster).item(), rel=1e-12)
    assert history.arrays["cluster"][-1] == state.assignment.tolist()


def test_optimum_error_by_hand() -> None:
    ctx = SimpleNamespace(truth=GroundTruth(cluster=np.array([0, 1, 1]),
                                            extras={"optima": np.array([[0.0, 0.0], [1.0, 2.0]])}))
    x = torch.tensor([[1.0, 1.0], [1.0, 2.0], [4.0, 6.0]])
    # ||(1,1)||^2 = 2, 0, ||(3,4)||^2 = 25 -> 27 / 3 = 9
    assert OptimumError(ctx).evaluate(View(client_models={"x": x})) == {"optimum_error": 9.0}


def test_pfl_tc_recovers_separated_clusters_through_the_class() -> None:
    """100 samples per client, K = 4 x 9 clients, d = 4: the momentums separate."""
    run = run_inputs(samples=100, per_cluster=9, rounds=5)
    history = PflTc(ClusterHyper(), PflTc.make_context(run)).run()
    assert [r["ari"] for r in history.records] == [1.0] * 5
    alone = Standalone(StepHyper(), Standalone.make_context(run)).run()
    assert history.records[-1]["optimum_error"] < alone.records[-1]["optimum_error"]
