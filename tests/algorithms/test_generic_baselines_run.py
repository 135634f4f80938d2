"""cfl and fedavg_ft through the params files and the runner: the p1 entries (beside fedavg,
local, ifca) load with the classes' defaults, and one seed of a shrunk P1 synthetic
experiment trains through `run_seed` (make_context, default evaluators, the loop)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from clusterfl.algorithms.cfl import CflHyper
from clusterfl.algorithms.fedavg_ft import FedAvgFtHyper
from clusterfl.data.synthetic import ClusteredSyntheticOptions, clustered_synthetic
from clusterfl.partition.schemes import NaturalOptions, natural
from clusterfl.run.config import load_params
from clusterfl.run.runner import run_seed

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def params():
    return load_params(ROOT / "params.yaml")


def test_params_entries_are_the_documented_defaults(params):
    assert params.algorithm("cfl", paper="p1").hyper == CflHyper()
    assert params.algorithm("fedavg_ft", paper="p1").hyper == FedAvgFtHyper()
    assert CflHyper() == CflHyper(eps1=0.4, eps2=1.6, warmup_rounds=20, min_split_size=3,
                                  gamma_max=0.0, linkage="single")
    assert FedAvgFtHyper().finetune_steps == 10


def test_both_train_one_seed_through_the_runner(params):
    opts = ClusteredSyntheticOptions(clients_per_cluster=3, dimension=20, max_size=60)
    dataset = clustered_synthetic(opts, np.random.default_rng(0))
    partition = natural(dataset, NaturalOptions(), np.random.default_rng(1))
    exp = params.experiment("p1_synthetic_mlr")
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=3))
    cfl = params.algorithm("cfl", experiment=exp.name)
    cfl = dataclasses.replace(cfl, hyper=dataclasses.replace(cfl.hyper, eps1=1e9, eps2=0.0,
                                                             warmup_rounds=1))
    history = run_seed(exp, cfl, dataset, partition, seed=0)
    assert [r["cfl_clusters"] for r in history.records] == [1.0, 2.0, 3.0]
    assert {"test_acc", "ari", "nmi"} <= history.records[-1].keys()
    assert len(set(history.arrays["cluster"][-1])) == 3
    ft = run_seed(exp, params.algorithm("fedavg_ft", experiment=exp.name), dataset, partition, 0)
    fedavg = run_seed(exp, params.algorithm("fedavg", experiment=exp.name), dataset, partition, 0)
    assert ft.records[-1]["test_acc"] > fedavg.records[-1]["test_acc"]
