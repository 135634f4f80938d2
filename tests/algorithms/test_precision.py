"""`training.precision`: the engine's arithmetic, set in params like every number that shapes
a result; fp32 unless a suite asks, refused where it cannot apply."""

import dataclasses
from pathlib import Path

import pytest
import torch

from clusterfl.algorithms.base import Schedule, build_engine
from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options
from clusterfl.data import build_dataset
from clusterfl.engine import ReferenceEngine, VectorizedEngine
from clusterfl.partition import build_partition
from clusterfl.run.config import load_params
from clusterfl.run.runner import run_seed
from clusterfl.training.models import build_model
from tests.engine.conftest import make_data

ROOT = Path(__file__).resolve().parents[2]
KEY = "experiments.e.training"


def test_the_engine_gets_the_schedules_precision():
    data, dnn = make_data(), build_model("dnn", (12,), 4, {"hidden": 8})
    fp32 = build_engine("reference", dnn, data, Schedule(lr=0.1, local_steps=1), KEY)
    assert isinstance(fp32, ReferenceEngine)
    tf32 = build_engine("vectorized", dnn, data, Schedule(lr=0.1, precision="tf32"), KEY)
    assert isinstance(tf32, VectorizedEngine) and tf32.precision == "tf32"
    bf16 = build_engine("vectorized", dnn, data, Schedule(lr=0.1, precision="bf16"), KEY)
    assert bf16.kernel.matmul_dtype == torch.bfloat16


def test_a_precision_that_cannot_apply_is_a_one_line_error():
    data, dnn = make_data(), build_model("dnn", (12,), 4, {"hidden": 8})
    with pytest.raises(UserError, match=r"^experiments\.e\.training\.precision: 'tf32' needs "
                                        r"the vectorized engine"):
        build_engine("reference", dnn, data, Schedule(lr=0.1, precision="tf32"), KEY)
    tanh = torch.nn.Sequential(torch.nn.Linear(12, 6), torch.nn.Tanh(), torch.nn.Linear(6, 4))
    with pytest.raises(UserError, match=r"precision: 'bf16' runs on Linear-ReLU models only"):
        build_engine("vectorized", tanh, data, Schedule(lr=0.1, precision="bf16"), KEY)


def test_an_unknown_precision_names_the_key_and_the_choices():
    with pytest.raises(UserError, match=r"^experiments\.e\.training\.precision: 'fp16' is "
                                        r"not allowed; allowed: fp32, tf32, bf16"):
        build_options(Schedule, {"lr": 0.1, "precision": "fp16"}, KEY)


def _synthetic_cell(precision: str):
    params = load_params(ROOT / "params.yaml")
    exp = params.experiment("p1_synthetic_dnn")
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=3,
                                                                precision=precision))
    entry = dict(params.partition(exp.partition))
    source, options = params.dataset(entry.pop("dataset"))
    dataset = build_dataset(source, {**options, "clients_per_cluster": 2, "max_size": 80}, "d")
    partition = build_partition(dataset, entry.pop("scheme"), entry, 0, "p")
    alg = params.algorithm("fedavg", experiment="p1_synthetic_dnn")
    return [r["test_loss"] for r in run_seed(exp, alg, dataset, partition, 0).records]


def test_bf16_moves_a_cells_numbers_and_tf32_on_the_cpu_does_not():
    fp32 = _synthetic_cell("fp32")
    assert _synthetic_cell("tf32") == fp32  # a CUDA mode: the CPU computes fp32
    bf16 = _synthetic_cell("bf16")
    assert bf16 != fp32 and bf16 == pytest.approx(fp32, rel=0.02)
