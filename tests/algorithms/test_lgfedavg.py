"""LG-FedAvg (algorithms/lgfedavg.py): two rounds by hand (local hidden
layer, global output layer), the FedAvg warm-up and uniform weights by hand, both engines
agree, and a seed through the runner."""

from clusterfl.algorithms.lgfedavg import LgFedAvgHyper
from tests.algorithms.split_problem import (
    BASE,
    HEAD,
    assert_engines_agree,
    assert_models_close,
    build,
    client_xy,
    row,
    run_twice,
    runner_problem,
    sgd_steps,
    timeless,
    two_clients,
    unequal_clients,
)


def lg_round(data, models, weights=(0.4, 0.6)):
    """One LG-FedAvg round by hand: 2 full-batch steps on every layer, then the output
    layer averaged with `weights`; each client keeps its hidden layer."""
    trained = [sgd_steps(models[c], *client_xy(data, c), lr=0.3, steps=2) for c in (0, 1)]
    top = {k: weights[0] * trained[0][k] + weights[1] * trained[1][k] for k in HEAD}
    return [{k: trained[c][k] for k in BASE} | top for c in (0, 1)]


def test_two_rounds_by_hand():
    data = two_clients()
    algo = build("lgfedavg", data)
    algo.setup()
    assert algo.shared_names == HEAD and algo.personal_names == BASE
    models = [row(algo.client_models(), c) for c in (0, 1)]
    for round_ in (1, 2):
        models = lg_round(data, models)
        algo.round(round_, algo.all_clients)
        for c in (0, 1):
            assert_models_close(row(algo.client_models(), c), models[c])


def test_fedavg_warmup_then_uniform_lg_rounds_by_hand():
    """Round 1 is FedAvg (every layer averaged, both clients then hold the average); round 2
    is LG-FedAvg with uniform weights (the official `main_lg.py`)."""
    data = two_clients()
    algo = build("lgfedavg", data, {"fedavg_warmup_rounds": 1, "weighting": "uniform"})
    algo.setup()
    start = row(algo.client_models(), 0)
    trained = [sgd_steps(start, *client_xy(data, c), lr=0.3, steps=2) for c in (0, 1)]
    average = {k: 0.5 * trained[0][k] + 0.5 * trained[1][k] for k in start}
    algo.round(1, algo.all_clients)
    for c in (0, 1):
        assert_models_close(row(algo.client_models(), c), average)
    models = lg_round(data, [average, average], weights=(0.5, 0.5))
    algo.round(2, algo.all_clients)
    for c in (0, 1):
        assert_models_close(row(algo.client_models(), c), models[c])


def test_engines_agree():
    assert_engines_agree("lgfedavg", unequal_clients(), {"fedavg_warmup_rounds": 1})


def test_params_entry_and_a_seed_through_the_runner():
    _, algorithm, _, _ = runner_problem("lgfedavg")
    assert algorithm.hyper == LgFedAvgHyper() == LgFedAvgHyper(shared=("3",),
                                                                fedavg_warmup_rounds=0)
    first, again, other = run_twice("lgfedavg")
    assert timeless(first) == timeless(again)
    assert timeless(first) != timeless(other)
    assert len(first.records) == 3 and 0.0 <= first.records[-1]["test_acc"] <= 1.0
