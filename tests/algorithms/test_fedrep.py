"""FedRep (algorithms/fedrep.py): two rounds by hand (head with the body
frozen, then body with the head frozen), head epochs vs steps, both engines agree, bad
input, and a seed through the runner."""

import pytest

from clusterfl.algorithms.fedrep import FedRepHyper
from clusterfl.core.errors import UserError
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


def test_two_rounds_by_hand():
    """Each client: 3 full-batch steps on its head (body frozen), then 2 on the body (head
    frozen), lr 0.3; the server averages the bodies with weights 4/10 and 6/10."""
    data = two_clients()
    algo = build("fedrep", data, {"shared": ("1",), "head_epochs": None, "head_steps": 3})
    algo.setup()
    models = [row(algo.client_models(), c) for c in (0, 1)]
    for round_ in (1, 2):
        trained = []
        for c in (0, 1):
            x, y = client_xy(data, c)
            head = sgd_steps(models[c], x, y, lr=0.3, steps=3, trainable=HEAD)
            assert all((head[k] == models[c][k]).all() for k in BASE)
            trained.append(sgd_steps(head, x, y, lr=0.3, steps=2, trainable=BASE))
        body = {k: 0.4 * trained[0][k] + 0.6 * trained[1][k] for k in BASE}
        models = [body | {k: trained[c][k] for k in HEAD} for c in (0, 1)]
        algo.round(round_, algo.all_clients)
        for c in (0, 1):
            assert_models_close(row(algo.client_models(), c), models[c])


def test_head_epochs_of_full_batches_are_head_steps():
    """With batches larger than every client, an epoch is one step (one permutation drawn
    either way), so 2 head epochs and 2 head steps give the same run bit for bit."""
    data = two_clients()
    runs = [build("fedrep", data, hyper, rounds=3).run()
            for hyper in ({"head_epochs": 2}, {"head_epochs": None, "head_steps": 2})]
    assert timeless(runs[0]) == timeless(runs[1])


def test_engines_agree():
    assert_engines_agree("fedrep", unequal_clients(), {"head_epochs": 2})


def test_bad_input_is_a_one_line_error():
    with pytest.raises(UserError, match=r"^k: set exactly one of head_epochs and head_steps$"):
        FedRepHyper(head_epochs=10, head_steps=3).validate("k")
    with pytest.raises(UserError, match=r"^k.head_steps: must be >= 1, got 0$"):
        FedRepHyper(head_epochs=None, head_steps=0).validate("k")
    algo = build("fedrep", two_clients(), {"shared": ("1", "3")})
    with pytest.raises(UserError, match=r"^fedrep.shared: must leave a head: name only the "
                                        r"body's layers, not all of 1.weight, 1.bias, "
                                        r"3.weight, 3.bias$"):
        algo.setup()


def test_params_entry_and_a_seed_through_the_runner():
    _, algorithm, _, _ = runner_problem("fedrep")
    assert algorithm.hyper == FedRepHyper() == FedRepHyper(shared=("1",), head_epochs=10)
    first, again, other = run_twice("fedrep")
    assert timeless(first) == timeless(again)
    assert timeless(first) != timeless(other)
    assert len(first.records) == 3 and 0.0 <= first.records[-1]["test_acc"] <= 1.0
