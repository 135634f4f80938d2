"""The benchmarks' plumbing on tiny sizes (their figures are checked by running them)."""

import json
import os

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from clusterfl.bench.cpu import (
    algorithm_round,
    time_rounds,
    training_flops_per_sample,
)
from clusterfl.engine import VectorizedEngine, configure_threads, split_threads
from clusterfl.training.models import build_model
from pipeline.bench_cmd import bench_app
from tests.engine.conftest import MODELS, make_data


def test_training_flops_of_the_dnn():
    model = build_model("dnn", (784,), 10, {"hidden": 128})
    # forward 2*(784*128 + 128*10), weight grads the same, input grad of layer 2 only
    assert training_flops_per_sample(model) == 4 * (784 * 128 + 128 * 10) + 2 * 128 * 10


def test_training_flops_of_the_cnns_count_every_convolution():
    model = build_model("cnn", (3, 32, 32), 10, {"channels": [32, 64], "kernel_size": 5,
                                                 "padding": 2, "hidden": 512})
    conv1, conv2 = 32 * 32 * 32 * 3 * 25, 16 * 16 * 64 * 32 * 25  # Ho*Wo*Cout*Cin*k*k
    fc1, fc2 = 64 * 8 * 8 * 512, 512 * 10
    macs = conv1 + conv2 + fc1 + fc2
    assert training_flops_per_sample(model, (3, 32, 32)) == 4 * macs + 2 * (macs - conv1)
    pfllib = build_model("cnn", (3, 32, 32), 10, {"padding": 0})  # FedAvgCNN: dim 1600
    assert pfllib[7].in_features == 1600


def test_engine_command_prints_one_json_object_per_model_and_size():
    result = CliRunner().invoke(bench_app, [
        "engine", "--clients", "2,3", "--models", "mlr", "--batch", "2", "--local-steps", "1",
        "--repeats", "1"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["clients"] for r in rows] == [2, 3]
    for r in rows:
        assert r["speedup"] == pytest.approx(
            r["engine_client_steps_per_s"] / r["reference_client_steps_per_s"], rel=0.02, abs=0.01)
        # (speedup is rounded to 2 decimals and the rates to 1: allow that rounding)
        assert r["gemm_fraction"] == pytest.approx(r["engine_gflops"] / r["gemm_gflops"],
                                                   abs=1e-3)  # both rounded


def test_engine_command_runs_a_cnn_row_on_the_conv_kernel_at_its_own_batch():
    result = CliRunner().invoke(bench_app, [
        "engine", "--clients", "2", "--models", "pfllib_cnn", "--local-steps", "1",
        "--repeats", "1"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines()]
    assert row["kernel"] == "ConvKernel" and row["batch"] == 10
    model = build_model("cnn", (3, 32, 32), 10, {"padding": 0})
    assert row["flops_per_client_step"] == 10 * training_flops_per_sample(model, (3, 32, 32))
    assert row["engine_client_steps_per_s"] > 0 and row["vmap_client_steps_per_s"] > 0


def test_cnn_cells_build_on_stand_in_data_of_the_real_shape(tmp_path):
    """The paper_online letters cell (its data cannot be downloaded here) as `bench cell`
    builds it: the suite's partition and CNN on random EMNIST-shaped data, the conv kernel."""
    from pathlib import Path

    from clusterfl.bench.gpu import build_cell, cell_dataset

    cifar, note = cell_dataset("cifar10", tmp_path, 0)
    assert cifar.x.shape[1:] == (3, 32, 32) and cifar.num_classes == 10 and "synthetic" in note
    instance, _, source = build_cell("cpu", cell=("p2_letters_1090", "fedsoft"),
                                     suite=Path("suites/paper_online/params.yaml"))
    data = instance.ctx.engine.data
    assert type(instance.ctx.engine.kernel).__name__ == "ConvKernel"
    assert data.num_clients == 100 and data.train_x.shape[2:] == (1, 28, 28)
    assert int(data.train_y.max()) < 26 and source.startswith("synthetic emnist_letters_case")
    bad = CliRunner().invoke(bench_app, ["cell", "p1_cifar10_cnn"])
    assert bad.exit_code == 2 and "EXPERIMENT/ALGORITHM" in bad.output


def test_adam_command_times_both_paths_on_the_models_parameters():
    result = CliRunner().invoke(bench_app, ["adam", "--clients", "3", "--models", "mlr,dnn",
                                            "--repeats", "1"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["floats"] for r in rows] == [3 * (784 * 10 + 10), 3 * (784 * 128 + 128 + 1290)]
    for r in rows:
        assert r["fused_ms"] > 0 and r["formula_ms"] > 0
        # both times are printed to 3 decimals: the ratio of the printed values can be off
        # by their rounding (0.0005 ms each), the speedup itself by its own (0.005)
        low = (r["formula_ms"] - 5e-4) / (r["fused_ms"] + 5e-4) - 5e-3
        high = (r["formula_ms"] + 5e-4) / max(r["fused_ms"] - 5e-4, 1e-9) + 5e-3
        assert low <= r["speedup"] <= high


@pytest.mark.parametrize("algorithm", ["fedavg", "pfedme"])
def test_rounds_train_one_epoch_and_are_timed(algorithm):
    data = make_data()
    model = MODELS["dnn"]()
    engine = VectorizedEngine(model, data)
    calls = []

    def spy(params, clients, rule, plan, prox=None):
        calls.append(plan.active.sum(0).tolist())
        return VectorizedEngine.train_with_state(engine, params, clients, rule, plan, prox)

    engine.train_with_state = spy
    run = algorithm_round(algorithm, engine, model, lr=0.05, batch=4, seed=0)  # the real class
    assert run is not None
    assert time_rounds(run, rounds=2) > 0
    assert len(calls) == 3  # one warm-up round, two timed
    assert calls[0] == [-(-n // 4) for n in data.train_n.tolist()]  # one epoch of batches of 4


def test_configure_threads_sets_torch_and_child_env(monkeypatch):
    before = torch.get_num_threads()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"):
        monkeypatch.setenv(name, "7")  # so that monkeypatch restores the original at the end
        monkeypatch.delenv(name)
    try:
        assert configure_threads(1) == 1
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
        assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
        assert configure_threads(None) == 1  # None leaves the setting alone
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError):
        configure_threads(0)


def test_split_threads():
    assert split_threads(jobs=2, cores=2) == 1
    assert split_threads(jobs=1, cores=2) == 2
    assert split_threads(jobs=4, cores=2) == 1
    assert split_threads(jobs=2, cores=16) == 8


def test_round_data_falls_back_to_synthetic_and_says_so(tmp_path):
    from clusterfl.bench.cpu import fashion_mnist

    x, y, source = fashion_mnist(np.random.default_rng(0), root=tmp_path)
    assert x.shape == (70000, 784) and x.dtype == np.float32
    assert np.bincount(y).tolist() == [7000] * 10
    assert source.startswith("synthetic") and str(tmp_path) in source


def test_fedc_command_times_the_batched_round_against_the_loop():
    result = CliRunner().invoke(bench_app, ["fedc", "--clients", "4", "--features", "12",
                                            "--samples", "80", "--clusters", "3",
                                            "--sncp-iterations", "5", "--threads", "1"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.strip().splitlines()[-1])
    assert out["batched_s"] > 0 and out["loop_s"] > 0
    assert out["ratio"] == pytest.approx(out["loop_s"] / out["batched_s"])
    assert out["max_abs_diff_w"] < 1e-8  # the batched round equals the loop
    assert 0 <= out["kmeans_accuracy"] <= 1 and out["sncp_iterations"] == 5
