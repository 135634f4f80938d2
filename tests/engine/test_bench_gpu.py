"""`clusterfl bench gpu`: its plain reference step is right, and the command runs on a machine
without CUDA (one "no CUDA device" line per GPU row) with mlflow, dvc and mlxtend unimportable,
as on the lent GPU machine."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from clusterfl.bench.cpu import synthetic_clients
from clusterfl.bench.gpu import plain_cnn_steps, plain_sgd_steps, precision_effect
from clusterfl.engine import ClientData, ReferenceEngine, Sgd, make_plan
from clusterfl.training.models import build_model
from tests.engine.conftest import stacked_params

ROOT = Path(__file__).resolve().parents[2]


def test_the_plain_step_is_sgd_on_the_mean_cross_entropy():
    rng = np.random.default_rng(0)
    data = synthetic_clients(3, 12, rng)
    model = build_model("dnn", (784,), 10, {"hidden": 16})
    params = stacked_params(model, 3)
    plan = make_plan(data.train_n.numpy(), 4, rng, local_steps=3)
    flat = (plan.index + torch.arange(3).view(1, -1, 1) * data.train_x.shape[1]).flatten()
    xs = data.train_x.flatten(0, 1)[flat].view(*plan.index.shape, 784)
    ys = data.train_y.flatten()[flat].view(plan.index.shape)
    plain = {k: v.clone() for k, v in params.items()}
    plain_sgd_steps(plain, xs, ys, 0.05)
    ref = ReferenceEngine(model, data).train(params, torch.arange(3), Sgd(lr=0.05), plan)
    for k in ref:
        torch.testing.assert_close(plain[k], ref[k], rtol=1e-4, atol=1e-6)
        assert not torch.equal(plain[k], params[k])


@pytest.mark.parametrize("padding", [0, 1])
def test_the_plain_cnn_step_is_sgd_on_the_mean_cross_entropy(padding):
    rng = np.random.default_rng(0)
    parts = [(rng.random((12, 3, 12, 12), dtype=np.float32), rng.integers(0, 4, 12))
             for _ in range(3)]
    data = ClientData.from_lists(parts, parts)
    model = build_model("cnn", (3, 12, 12), 4, {"channels": [2, 3], "kernel_size": 3,
                                                "padding": padding, "hidden": 5})
    params = stacked_params(model, 3)
    plan = make_plan(data.train_n.numpy(), 4, rng, local_steps=3)
    flat = (plan.index + torch.arange(3).view(1, -1, 1) * data.train_x.shape[1]).flatten()
    xs = data.train_x.flatten(0, 1)[flat].view(*plan.index.shape, 3, 12, 12)
    ys = data.train_y.flatten()[flat].view(plan.index.shape)
    plain = {k: v.clone().requires_grad_() for k, v in params.items()}
    plain_cnn_steps(plain, xs, ys, 0.05, padding)
    ref = ReferenceEngine(model, data).train(params, torch.arange(3), Sgd(lr=0.05), plan)
    for k in ref:
        torch.testing.assert_close(plain[k].detach(), ref[k], rtol=1e-4, atol=1e-6)
        assert not torch.equal(plain[k].detach(), params[k])


def test_precision_effect_reports_each_precision_against_fp32(tmp_path):
    rows = list(precision_effect("cpu", rounds=1, data_root=tmp_path))  # random data: absent
    assert [r["precision"] for r in rows] == ["fp32", "tf32", "bf16"]
    assert rows[0]["max_abs_gap_to_fp32"] == 0.0
    assert rows[1]["max_abs_gap_to_fp32"] == 0.0  # TF32 is a CUDA mode: the CPU computes fp32
    assert all(0.0 <= r["last"] <= 1.0 and r["data"].startswith("synthetic") for r in rows)


@pytest.mark.slow  # the whole command in a subprocess: ~15 s
def test_bench_gpu_runs_without_cuda_and_without_mlflow_dvc_mlxtend(tmp_path):
    blocked = "import sys; sys.modules.update(mlflow=None, dvc=None, mlxtend=None)"
    # `bench round`'s rows time 4 rounds of 20 Fashion-MNIST-sized clients (21 of this test's
    # 30 s of CPU); their numbers are not what it checks, so 2 rounds (a warm-up and 1 timed)
    small_rounds = ("import clusterfl.bench.gpu as g; full = g.bench_round; "
                    "g.bench_round = lambda a, rounds, device: full(a, rounds=1, device=device)")
    code = (f"{blocked}; {small_rounds}; from pipeline.cli import app; "
            f"app(['bench', 'gpu', '--clients', '2', "
            f"'--repeats', '1', '--cell-rounds', '1', '--effect-rounds', '1', "
            f"'--fashion-mnist', '{tmp_path}', '--threads', '1'])")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    cuda = [r for r in rows if r.get("device") == "cuda"]
    devices = [r.get("device") for r in rows]  # every cuda row before any CPU row
    assert devices == sorted(devices, key=lambda d: d != "cuda") and devices[-1] == "cpu"
    if not torch.cuda.is_available():
        assert cuda and all(r == {"bench": r["bench"], "device": "cuda",
                                  "skipped": "no CUDA device"} for r in cuda)
        assert {r["bench"] for r in cuda} == {"gemm", "engine", "cnn", "precision", "round",
                                              "cell", "precision_effect"}
    cpu = {(r["bench"], r.get("algorithm")): r for r in rows if r.get("device") == "cpu"}
    assert cpu[("engine", None)]["engine_client_steps_per_s"] > 0
    assert cpu[("engine", None)]["plain_client_steps_per_s"] > 0
    assert cpu[("round", "fedavg")]["seconds_per_round"] > 0
    assert cpu[("round", "pfedme")]["seconds_per_round"] > 0
    assert cpu[("cell", None)]["cell"] == "p1_fmnist_dnn_val/pfedkm_k4"
