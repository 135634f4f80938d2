"""FedAvg + local fine-tuning: 0 steps is FedAvg bit for bit; with steps, the global model
follows FedAvg's trajectory exactly and each client's model is w fine-tuned by hand."""

import torch

from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
from clusterfl.algorithms.fedavg import FedAvgHyper
from clusterfl.algorithms.fedavg_ft import FedAvgFt, FedAvgFtHyper
from clusterfl.engine import ENGINES
from clusterfl.training.models import build_model
from tests.algorithms.test_p1_algorithms import _mlr_grad_at_zero, _zero_start


def _ctx(data, rounds=4, lr=0.05, local_steps=3, batch=4, clients_per_round=None):
    model = build_model("mlr", (4,), 3)
    sched = Schedule(lr=lr, rounds=rounds, local_steps=local_steps, batch_size=batch,
                     clients_per_round=clients_per_round)
    return NeuralContext.build(model, ENGINES["vectorized"](model, data), sched, seed=0)


def test_zero_finetune_steps_is_fedavg_bit_for_bit(tiny_data):
    ft = ALGORITHMS.get("fedavg_ft")(FedAvgFtHyper(finetune_steps=0),
                                     _ctx(tiny_data, clients_per_round=2)).run()
    fedavg = ALGORITHMS.get("fedavg")(FedAvgHyper(), _ctx(tiny_data, clients_per_round=2)).run()
    assert ft.records == fedavg.records and ft.arrays == fedavg.arrays
    assert ft.primary == fedavg.primary


def test_finetuning_leaves_the_fedavg_trajectory_untouched(tiny_data):
    ft = FedAvgFt(FedAvgFtHyper(finetune_steps=5), _ctx(tiny_data, clients_per_round=2))
    fedavg = ALGORITHMS.get("fedavg")(FedAvgHyper(), _ctx(tiny_data, clients_per_round=2))
    a, b = ft.run(), fedavg.run()
    for k, v in fedavg.global_model.items():
        assert torch.equal(ft.global_model[k], v)
    assert [r["test_acc"] for r in a.records] != [r["test_acc"] for r in b.records]


def test_finetuned_model_by_hand(tiny_data):
    """From w = 0, one full-batch step: client c's model is -lr' * grad_c(0), with lr'
    = finetune_lr; the global model itself is not changed."""
    algo = _zero_start(FedAvgFt)(FedAvgFtHyper(finetune_steps=1, finetune_lr=0.3),
                                 _ctx(tiny_data, batch=9))
    algo.setup()
    models = algo.client_models()
    for c in range(3):
        torch.testing.assert_close(models["1.weight"][c], -0.3 * _mlr_grad_at_zero(tiny_data, c))
    assert not algo.global_model["1.weight"].any()
