"""Every algorithm family gives the same numbers on the GPU path as on the CPU's.

Families: P1's (FedAvg, Local, pFedMe, IFCA, pFedKM), P2's (FedSoft, FedEM, IFCA), the
benchmark's (CFL, FedAvg-FT, FedProx, Ditto, APFL, Per-FedAvg, FedPer, FedRep, LG-FedAvg,
FedALA, FeSEM, FedGroup, FL+HC) and P5's matrix factorization (FedCAvg, FedCGds), each on
shrunk data for 2 rounds.
- On every machine: the GPU's layout (`layout="whole"`: one program per round, batches
  gathered at once) run on the CPU against the CPU's chunked layout.
- With CUDA: the same cells on `cuda` (whole layout, rounds recorded as CUDA graphs) against
  the CPU. Tolerance rel 1e-3 / abs 1e-4: other kernels sum in other orders.
Nothing here imports mlflow, dvc or mlxtend, so the file runs on the lent GPU machine.
"""

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest
import torch

from clusterfl.core.types import Dataset
from clusterfl.data import build_dataset
from clusterfl.engine import VectorizedEngine
from clusterfl.partition import build_partition
from clusterfl.run.config import load_params
from clusterfl.run.runner import run_seed

ROOT = Path(__file__).resolve().parents[1]
CUDA = torch.cuda.is_available()
TIMINGS = {"kmeans_seconds", "seconds"}
BENCHMARK = ("cfl", "fedavg_ft", "fedprox", "ditto", "apfl", "perfedavg", "fedper", "fedrep",
             "lgfedavg", "fedala", "fesem", "fedgroup", "flhc")


def _shrunk(params, experiment: str, dataset: Dataset | None, shrink: dict, partition: dict,
            rounds: int = 2):
    exp = params.experiment(experiment)
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=rounds))
    entry = dict(params.partition(exp.partition))
    name = entry.pop("dataset")
    if dataset is None:
        source, options = params.dataset(name)
        dataset = build_dataset(source, {**options, **shrink}, f"datasets.{name}")
    scheme = entry.pop("scheme")
    entry.pop("validation_fraction", None)  # the benchmark's tuning split: not needed here
    entry.update(partition)
    return exp, dataset, build_partition(dataset, scheme, entry, 0, f"partitions.{exp.partition}")


def _fashion_shaped(n: int = 480) -> Dataset:
    """Random 28x28 'images' in 10 classes: the benchmark's shape without its download."""
    rng = np.random.default_rng(0)
    return Dataset("fashion_mnist", rng.random((n, 1, 28, 28), dtype=np.float32),
                   np.tile(np.arange(10), n // 10), 10)


def cells():
    """(name, experiment, algorithm config, dataset, partition) of every family."""
    root = load_params(ROOT / "params.yaml")
    bench = load_params(ROOT / "suites/benchmark/params.yaml")
    out = []
    for experiment, names, shrink, part in (
            ("p1_synthetic_mlr", ("fedavg", "local", "pfedme", "ifca_k2", "pfedkm_k2"),
             {"clients_per_cluster": 2, "max_size": 80}, {}),
            ("p2_synth_1090", ("fedsoft", "fedem", "ifca_p2"),
             {"samples_per_distribution": 600, "test_per_distribution": 100},
             {"num_clients": 6, "size_range": [10, 20], "holdout_size": 100}),
            ("p5_syn_unf", ("fedcavg", "fedcgds"),
             {"features": 40, "samples": 200, "clusters": 4}, {"num_clients": 5})):
        exp, dataset, partition = _shrunk(root, experiment, None, shrink, part)
        out += [(f"{experiment}/{m}", exp, root.algorithm(m, experiment=experiment), dataset,
                 partition) for m in names]
    exp, dataset, partition = _shrunk(bench, "bm_rot4", _fashion_shaped(), {},
                                      {"num_clients": 8})
    out += [(f"bm_rot4/{m}", exp, bench.algorithm(m, "bm_rot4"), dataset, partition)
            for m in BENCHMARK]
    return out


CELLS = cells()


def _records(history) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in history.records]


def _assert_same(a, b, name: str) -> None:
    for ra, rb in zip(_records(a), _records(b), strict=True):
        assert ra.keys() == rb.keys(), name
        for k in ra:
            assert rb[k] == pytest.approx(ra[k], rel=1e-3, abs=1e-4), (name, k)


def test_every_family_is_covered():
    assert len(CELLS) == 5 + 3 + 2 + len(BENCHMARK)


@pytest.mark.parametrize(("name", "exp", "alg", "dataset", "partition"), CELLS,
                         ids=[c[0] for c in CELLS])
def test_the_gpu_layout_on_the_cpu_gives_the_cpu_numbers(name, exp, alg, dataset, partition,
                                                        monkeypatch):
    chunked = run_seed(exp, alg, dataset, partition, 0)
    monkeypatch.setitem(__import__("clusterfl.engine", fromlist=["ENGINES"]).ENGINES,
                        "vectorized", functools.partial(VectorizedEngine, layout="whole"))
    whole = run_seed(exp, alg, dataset, partition, 0)
    _assert_same(chunked, whole, name)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize(("name", "exp", "alg", "dataset", "partition"), CELLS,
                         ids=[c[0] for c in CELLS])
def test_every_family_on_cuda_gives_the_cpu_numbers(name, exp, alg, dataset, partition):
    cpu = run_seed(exp, alg, dataset, partition, 0, device="cpu")
    cuda = run_seed(exp, alg, dataset, partition, 0, device="cuda")
    _assert_same(cpu, cuda, name)
