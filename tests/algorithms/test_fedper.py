"""FedPer (algorithms/fedper.py): two rounds by hand, FedPer sharing every
layer is FedAvg bit for bit, both engines agree, and a seed through the runner."""

import pytest
import torch

from clusterfl.algorithms.fedper import FedPerHyper
from clusterfl.algorithms.split_model import split_names
from clusterfl.core.errors import UserError
from tests.algorithms.split_problem import (
    BASE,
    HEAD,
    TIGHT,
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


def test_split_names_resolves_modules_and_names_in_model_order():
    names = ["1.weight", "1.bias", "3.weight", "3.bias"]
    assert split_names(["3.bias", "1"], names, "k") == ("1.weight", "1.bias", "3.bias")
    with pytest.raises(UserError, match=r"^k: '2' is no parameter or module of the model; "
                                        r"allowed: 1.weight, 1.bias, 3.weight, 3.bias, 1, 3$"):
        split_names(["1", "2"], names, "k")


def test_two_rounds_by_hand():
    """Each client: 2 full-batch SGD steps on every layer from (base, own head); the server
    averages the base with weights 4/10 and 6/10; each client keeps its trained head."""
    data = two_clients()
    algo = build("fedper", data, {"shared": ("1",)})
    algo.setup()
    models = [row(algo.client_models(), c) for c in (0, 1)]
    assert_models_close(models[0], models[1])  # one initial draw
    for round_ in (1, 2):
        trained = [sgd_steps(models[c], *client_xy(data, c), lr=0.3, steps=2) for c in (0, 1)]
        base = {k: 0.4 * trained[0][k] + 0.6 * trained[1][k] for k in BASE}
        models = [base | {k: trained[c][k] for k in HEAD} for c in (0, 1)]
        algo.round(round_, algo.all_clients)
        for c in (0, 1):
            assert_models_close(row(algo.client_models(), c), models[c])
    assert not torch.allclose(models[0]["3.weight"], models[1]["3.weight"])
    for k in BASE:
        torch.testing.assert_close(algo.shared[k], base[k], **TIGHT)


def test_sharing_every_layer_is_fedavg_bit_for_bit():
    data = unequal_clients()
    schedule = {"rounds": 4, "epochs": 1, "batch_size": 2, "clients_per_round": 2}
    fedper = build("fedper", data, {"shared": ("1", "3")}, **schedule)
    fedavg = build("fedavg", data, **schedule)
    a, b = fedper.run(), fedavg.run()
    assert timeless(a) == timeless(b)
    for k, v in fedavg.global_model.items():
        assert torch.equal(fedper.shared[k], v)


def test_engines_agree():
    assert_engines_agree("fedper", unequal_clients())


def test_unknown_layer_is_a_one_line_error():
    algo = build("fedper", two_clients(), {"shared": ("1", "4")})
    with pytest.raises(UserError, match=r"^fedper.shared: '4' is no parameter or module of the "
                                        r"model; allowed: 1.weight, 1.bias, 3.weight, 3.bias, "
                                        r"1, 3$"):
        algo.setup()


def test_params_entry_and_a_seed_through_the_runner():
    _, algorithm, _, _ = runner_problem("fedper")
    assert algorithm.hyper == FedPerHyper() == FedPerHyper(shared=("1",), weighting="samples")
    first, again, other = run_twice("fedper")
    assert timeless(first) == timeless(again)
    assert timeless(first) != timeless(other)
    assert len(first.records) == 3 and 0.0 <= first.records[-1]["test_acc"] <= 1.0
