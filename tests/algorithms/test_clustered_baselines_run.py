"""FeSEM, FedGroup and FL+HC through the params files and the runner: the benchmark's entries
load (the documented defaults), and one seed of a shrunk synthetic experiment with true
clusters trains through `run_seed` (make_context, default evaluators, the loop), the same
seed giving the same numbers."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from clusterfl.algorithms.fedgroup import FedGroupHyper
from clusterfl.algorithms.fesem import FeSemHyper
from clusterfl.algorithms.flhc import FlHcHyper
from clusterfl.data.synthetic import ClusteredSyntheticOptions, clustered_synthetic
from clusterfl.partition.schemes import NaturalOptions, natural
from clusterfl.run.config import load_params
from clusterfl.run.runner import run_seed
from clusterfl.training.tuning import cluster_field

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def params():
    return load_params(ROOT / "suites/benchmark/params.yaml", load=())


@pytest.fixture(scope="module")
def problem():
    opts = ClusteredSyntheticOptions(clients_per_cluster=3, dimension=20, max_size=60)
    dataset = clustered_synthetic(opts, np.random.default_rng(0))
    return dataset, natural(dataset, NaturalOptions(), np.random.default_rng(1))


def test_benchmark_entries(params):
    assert params.algorithm("fesem", paper="benchmark").hyper == FeSemHyper(num_clusters=2)
    assert params.algorithm("fedgroup", paper="benchmark").hyper == FedGroupHyper(
        num_clusters=2, alpha=20, pretrain_steps=20, svd_components=None)
    assert params.algorithm("flhc", paper="benchmark").hyper == FlHcHyper(
        rounds_before_clustering=5, distance_threshold=1.0, linkage="ward", metric="euclidean")
    # the tune stage offers K to the two K methods, not to FL+HC (its K is found)
    assert [cluster_field(params.algorithm(a, paper="benchmark").hyper)
            for a in ("fesem", "fedgroup", "flhc")] == ["num_clusters", "num_clusters", None]


@pytest.mark.parametrize(("name", "changes"), [
    ("fesem", {"num_clusters": 3}),
    ("fedgroup", {"num_clusters": 3, "pretrain_steps": 5}),
    ("flhc", {"rounds_before_clustering": 1}),
])
def test_one_seed_through_the_runner_is_seed_deterministic(params, problem, name, changes):
    dataset, partition = problem
    exp = params.experiment("p1_synthetic_mlr")
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=3))
    algorithm = params.algorithm(name, paper="benchmark")
    algorithm = dataclasses.replace(algorithm,
                                    hyper=dataclasses.replace(algorithm.hyper, **changes))
    first = run_seed(exp, algorithm, dataset, partition, seed=0)
    again = run_seed(exp, algorithm, dataset, partition, seed=0)
    other = run_seed(exp, algorithm, dataset, partition, seed=1)
    assert {"test_acc", "ari", "nmi"} <= first.records[-1].keys()
    assert len(first.arrays["cluster"][-1]) == partition.num_clients
    assert first.records == again.records and first.arrays == again.arrays
    assert [r["test_acc"] for r in other.records] != [r["test_acc"] for r in first.records]
