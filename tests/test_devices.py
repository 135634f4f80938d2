"""--device: cpu, cuda or auto; every algorithm family on CUDA gives the CPU's numbers (to float
tolerance; skipped without a CUDA device). Plus the pieces the Ray executor is built from."""

import dataclasses
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from clusterfl.devices import resolve_device
from clusterfl.errors import UserError
from clusterfl.ray_executor import materialize

ROOT = Path(__file__).resolve().parents[1]
CUDA = torch.cuda.is_available()


def test_auto_is_cuda_only_where_there_is_one():
    assert resolve_device("auto", has_cuda=False) == "cpu"
    assert resolve_device("auto", has_cuda=True) == "cuda"
    assert resolve_device("cpu", has_cuda=True) == "cpu"


def test_cuda_without_one_and_unknown_names_are_one_line_errors():
    with pytest.raises(UserError, match=r"^--device cuda: no CUDA device on the Ray cluster"):
        resolve_device("cuda", has_cuda=False, where="the Ray cluster")
    with pytest.raises(UserError, match=r"--device: unknown value 'gpu'.*allowed: auto, cpu"):
        resolve_device("gpu", has_cuda=True)


@pytest.mark.skipif(CUDA, reason="checks the error a machine without CUDA gives")
@pytest.mark.parametrize("args", [["train", "p1_synthetic_mlr", "fedavg", "--device", "cuda"],
                                  ["bench", "round", "--device", "cuda"]])
def test_the_cli_refuses_cuda_without_one_with_exit_2(args, monkeypatch):
    from pipeline.cli import app

    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--device cuda: no CUDA device on this machine" in result.output


def test_a_task_file_is_written_once_under_its_digest(tmp_path):
    first = materialize("abc", "seed0.npz", b"1234", root=tmp_path)
    assert first == tmp_path / "abc" / "seed0.npz" and first.read_bytes() == b"1234"
    assert materialize("abc", "seed0.npz", b"other", root=tmp_path).read_bytes() == b"1234"
    assert [p.name for p in (tmp_path / "abc").iterdir()] == ["seed0.npz"]  # no temp left


def test_an_experiment_another_writer_just_created_is_used():
    from mlflow.exceptions import MlflowException

    from clusterfl.tracking import _experiment_id

    class Client:  # the other writer creates it between our look-up and our create
        calls = 0

        def get_experiment_by_name(self, name):
            self.calls += 1
            return None if self.calls == 1 else type("E", (), {"experiment_id": "7"})()

        def create_experiment(self, name):
            raise MlflowException(f"Experiment '{name}' already exists.")

    assert _experiment_id(Client(), "clusterfl") == "7"


def _cell_jobs(device: str) -> list:
    """Every P1 and P2 method on shrunk data, 2 rounds, on `device`."""
    from clusterfl.config import load_params
    from clusterfl.data import build_dataset
    from clusterfl.partition import build_partition
    from clusterfl.runner import run_seed

    params = load_params(ROOT / "params.yaml")
    shrink = {"p1_synthetic": {"clients_per_cluster": 2, "max_size": 80},
              "p2_synthetic": {"samples_per_distribution": 600, "test_per_distribution": 100}}
    out = []
    for experiment, names in (("p1_synthetic_mlr", ("fedavg", "local", "pfedme", "ifca_k2",
                                                    "pfedkm_k2")),
                              ("p2_synth_1090", ("fedsoft", "fedem", "ifca_p2"))):
        exp = params.experiment(experiment)
        exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=2))
        entry = dict(params.partition(exp.partition))
        name = entry.pop("dataset")
        source, options = params.dataset(name)
        dataset = build_dataset(source, {**options, **shrink[name]}, f"datasets.{name}")
        scheme = entry.pop("scheme")
        if name == "p2_synthetic":
            entry.update(num_clients=6, size_range=[10, 20], holdout_size=100)
        partition = build_partition(dataset, scheme, entry, 0, f"partitions.{exp.partition}")
        for method in names:
            alg = params.algorithm(method, experiment=experiment)
            out.append((f"{experiment}/{method}",
                        run_seed(exp, alg, dataset, partition, 0, device=device)))
    return out


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_every_method_on_cuda_gives_the_cpu_numbers():
    timeless = lambda h: [{k: v for k, v in r.items() if k != "kmeans_seconds"}  # noqa: E731
                          for r in h.records]
    for (name, cpu), (_, cuda) in zip(_cell_jobs("cpu"), _cell_jobs("cuda"), strict=True):
        for a, b in zip(timeless(cpu), timeless(cuda), strict=True):
            assert a.keys() == b.keys(), name
            for k in a:
                assert b[k] == pytest.approx(a[k], rel=1e-3, abs=1e-4), (name, k)
