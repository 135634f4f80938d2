"""--device: cpu, cuda or auto, and the pieces the Ray executor is built from. Every algorithm
family on CUDA against the CPU's numbers: tests/test_device_families.py."""

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from clusterfl.core.errors import UserError
from clusterfl.run.devices import resolve_device
from clusterfl.run.ray_executor import materialize

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

    from clusterfl.run.tracking import _experiment_id

    class Client:  # the other writer creates it between our look-up and our create
        calls = 0

        def get_experiment_by_name(self, name):
            self.calls += 1
            return None if self.calls == 1 else type("E", (), {"experiment_id": "7"})()

        def create_experiment(self, name):
            raise MlflowException(f"Experiment '{name}' already exists.")

    assert _experiment_id(Client(), "clusterfl") == "7"
