"""Bad inputs a newcomer tried (issue 38): each is one line and exit 2, or accepted as what
it means; nothing is allocated, trained or written first."""

import errno
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clusterfl.core.errors import UserError
from clusterfl.core.io import read_yaml
from clusterfl.run.config import load_params
from pipeline.cli import app
from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "params.yaml").read_text()
TRAINING = "training: {rounds: 30}"


def _file(tmp_path: Path, old: str, new: str, name: str = "params.yaml") -> Path:
    assert old in TEXT
    path = tmp_path / name
    path.write_text(TEXT.replace(old, new, 1))
    return path


def _cli(ws: Path, *args: str, env: dict[str, str] | None = None,
         monkeypatch: pytest.MonkeyPatch | None = None):
    """`clusterfl ARGS` in `ws`, in this process; the result (exit code, output)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ws)
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        return CliRunner().invoke(app, list(args))


def _one_line_error(result, *parts: str) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_non_finite_number_is_rejected_naming_its_key(tmp_path, value):
    path = _file(tmp_path, TRAINING, f"training: {{rounds: 30, lr: {value}}}")
    with pytest.raises(UserError, match=r"params\.yaml:suite\.training\.lr: must be a finite "
                                        r"number \(not inf or nan\)$"):
        load_params(path)
    listed = _file(tmp_path, "cluster_offsets: [-3.0, 0.0, 3.0]",
                   f"cluster_offsets: [-3.0, {value}, 3.0]", "listed.yaml")
    with pytest.raises(UserError, match=r"datasets\.p1_synthetic\.cluster_offsets\[1\]: "):
        read_yaml(listed)


def test_the_options_check_rejects_a_non_finite_float_from_anywhere():
    from clusterfl.algorithms.base import Schedule
    from clusterfl.core.options import build_options

    with pytest.raises(UserError, match=r"^k\.lr: must be a finite number, got inf$"):
        build_options(Schedule, {"lr": math.inf}, "k")


def test_an_exponent_without_a_dot_is_a_float_as_in_yaml_1_2(tmp_path):
    """PyYAML (YAML 1.1) read `1e30` as the string '1e30' ("expected float, got '1e30'");
    DVC reads the same file as YAML 1.2, where it is a float."""
    path = _file(tmp_path, TRAINING, "training: {rounds: 1e1, lr: 1e-2}")
    schedule = load_params(path).experiment("p1_synthetic_mlr").schedule
    assert (schedule.lr, schedule.rounds) == (0.01, 10)
    assert read_yaml(_file(tmp_path, TRAINING, "training: {lr: 1E+30}"))["suite"][
        "training"]["lr"] == 1e30
    quoted = _file(tmp_path, TRAINING, "training: {rounds: 30, lr: '1e30'}", "quoted.yaml")
    with pytest.raises(UserError, match=r"suite\.training\.lr: expected float, got '1e30' "
                                        r"\(a string: write the number without quotes\)$"):
        load_params(quoted)


def test_running_out_of_memory_anyway_is_one_line(tmp_path, monkeypatch):
    """The backstop behind the size checks: numpy's `_ArrayMemoryError` is a MemoryError."""
    import numpy as np

    (tmp_path / "params.yaml").write_text(TEXT)

    def too_big(*args, **kwargs):
        raise MemoryError("Unable to allocate 2.18 TiB for an array")

    monkeypatch.setattr(np, "repeat", too_big)
    _one_line_error(_cli(tmp_path, "download", "p1_synthetic", "-p", "params.yaml"),
                    "error: out of memory (Unable to allocate 2.18 TiB for an array); lower "
                    "the sizes in the params file")


@pytest.mark.parametrize("rounds", ["1000000000000", "1e12"])
def test_absurd_rounds_are_rejected_with_the_bound(tmp_path, rounds):
    path = _file(tmp_path, TRAINING, f"training: {{rounds: {rounds}}}")
    with pytest.raises(UserError, match=r"suite\.training\.rounds: must be <= 1,000,000 "):
        load_params(path).experiment("p1_synthetic_mlr")


def test_a_dataset_too_large_for_memory_is_refused_before_anything_is_allocated(tmp_path):
    _file(tmp_path, "clients_per_cluster: 20   #", "clients_per_cluster: 100000000000   #")
    result = _cli(tmp_path, "download", "p1_synthetic", "-p", "params.yaml")
    _one_line_error(result, "datasets.p1_synthetic.clients_per_cluster: 300000000000 clients",
                    "PiB of memory, more than the")
    assert not (tmp_path / "data").exists()
    from clusterfl.core.options import require_fits

    with pytest.raises(UserError, match=r"^k: 3 rows needs at least 2 KiB of memory, more "
                                        r"than the 1 KiB available here; lower it$"):
        require_fits("k", 2048, "3 rows", available=1024)


@pytest.mark.parametrize(("args", "env", "message"), [
    (["train", "p1_synthetic_mlr", "fedavg", "--threads", "0"], {},
     "--threads: must be an integer >= 1, got 0"),
    (["train", "p1_synthetic_mlr", "fedavg", "--jobs", "0"], {},
     "--jobs: must be an integer >= 1, got 0"),
    (["train", "p1_synthetic_mlr", "fedavg"], {"CLUSTERFL_JOBS": "abc"},
     "CLUSTERFL_JOBS: expected an integer >= 1, got 'abc'"),
    (["train", "p1_synthetic_mlr", "fedavg"], {"CLUSTERFL_THREADS": "two"},
     "CLUSTERFL_THREADS: expected an integer >= 1, got 'two'"),
    (["plan", "--jobs", "0"], {}, "--jobs: must be an integer >= 1, got 0"),
    (["plan"], {"CLUSTERFL_JOBS": "abc"}, "CLUSTERFL_JOBS: expected an integer >= 1"),
    (["sweep", "--executor", "process", "--cpus", "0"], {},
     "--cpus: must be an integer >= 1, got 0"),
])
def test_zero_or_garbage_counts_are_one_line(tmp_path, args, env, message):
    """0 threads or jobs was taken as "the default" while -1 was an error: both are errors
    now, the same way, and so is a typo in the variables that set them."""
    (tmp_path / "params.yaml").write_text(TEXT)
    _one_line_error(_cli(tmp_path, *args, "--no-probe" if args[0] == "plan" else "--no-track",
                         env={"MLFLOW_TRACKING_URI": f"file://{tmp_path}/mlruns", **env}),
                    message)
    assert not (tmp_path / "results").exists()


def test_plan_of_a_params_file_outside_the_repository_is_one_line(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "params.yaml").write_text(TEXT)
    _one_line_error(_cli(tmp_path / "repo", "plan", "-p", str(tmp_path / "params.yaml"),
                         "--no-probe"), "params.yaml: outside the repository")


def test_an_unwritable_output_directory_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    """A read-only results/ or reports/ (tested as its error: root may write anywhere)."""
    (tmp_path / "params.yaml").write_text(TEXT)

    def refused(directory, *args, **kwargs):  # io.temporary_dir / temporary_file
        raise PermissionError(errno.EACCES, "Permission denied", str(directory))

    monkeypatch.setattr("pipeline.common.temporary_dir", refused)
    line = _one_line_error(_cli(tmp_path, "download", "p4_threshold", "-p", "params.yaml"),
                           "data/default/raw/p4_threshold: cannot write it (Permission denied)")
    assert "Traceback" not in line and not list((tmp_path / "data").rglob("*.npz"))
    monkeypatch.undo()
    monkeypatch.setattr("clusterfl.core.io.temporary_file", refused)  # an atomic write in it
    _one_line_error(_cli(tmp_path, "download", "p4_threshold", "-p", "params.yaml"),
                    "cannot write (Permission denied); nothing was changed there")
    assert not list((tmp_path / "data").rglob("*.npz"))


def test_train_into_a_read_only_results_folder_stops_before_training(tmp_path, monkeypatch):
    import os

    (tmp_path / "params.yaml").write_text(TEXT)
    (tmp_path / "results").mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: (
        False if Path(path) == Path("results") else real(path, mode)))
    _one_line_error(_cli(tmp_path, "train", "p1_synthetic_mlr", "fedavg", "--no-track",
                         "-p", "params.yaml"),
                    "results: not writable, and results/default/p1_synthetic_mlr/fedavg is "
                    "written there; nothing was run")


def test_a_seed_outside_the_suite_names_the_command_that_makes_it(tmp_path):
    text = TEXT.replace("clients_per_cluster: 20   #", "clients_per_cluster: 3   #", 1)
    (tmp_path / "params.yaml").write_text(text)
    cli_in_process(tmp_path, "download", "p1_synthetic")
    cli_in_process(tmp_path, "partition", "p1_synthetic")
    _one_line_error(_cli(tmp_path, "train", "p1_synthetic_mlr", "fedavg", "--seed", "7",
                         "--no-track", "-p", "params.yaml"),
                    "--seed 7: not among suite.seeds [0, 1, 2] of params.yaml",
                    "`clusterfl partition p1_synthetic --suite default` makes; add 7 to "
                    "suite.seeds there, then run it")
    assert not (tmp_path / "results/default/p1_synthetic_mlr").exists()


def test_hints_of_a_suite_file_of_your_own_say_p_file_not_an_unknown_suite(tmp_path):
    (tmp_path / "params.yaml").write_text(TEXT)
    mine = yaml.safe_load(TEXT)
    mine["suite"]["name"] = "mine"
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))
    for args in (["partition", "p1_synthetic"], ["train", "p1_synthetic_mlr", "fedavg"]):
        line = _one_line_error(_cli(tmp_path, *args, "-p", "mine.yaml",
                                    *(["--no-track"] if args[0] == "train" else [])),
                               "run `clusterfl download p1_synthetic -p mine.yaml` first")
        assert "--suite mine" not in line


def test_a_damaged_file_of_a_suite_file_of_your_own_is_rebuilt_with_p_file(tmp_path):
    mine = yaml.safe_load(TEXT.replace("clients_per_cluster: 20   #",
                                       "clients_per_cluster: 3   #", 1))
    mine["suite"]["name"] = "mine"
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))
    cli_in_process(tmp_path, "download", "p1_synthetic", params="mine.yaml")
    cli_in_process(tmp_path, "partition", "p1_synthetic", params="mine.yaml")
    (tmp_path / "data/mine/partitions/p1_synthetic/seed0.npz").write_bytes(b"garbage")
    _one_line_error(_cli(tmp_path, "train", "p1_synthetic_mlr", "fedavg", "--no-track",
                         "-p", "mine.yaml"),
                    "data/mine/partitions/p1_synthetic/seed0.npz: ",
                    "; rebuild it with `clusterfl partition p1_synthetic -p mine.yaml`")


def test_the_progress_hint_of_a_suite_file_of_your_own_says_p():
    from pipeline.progress import no_plan_line

    assert "`clusterfl plan -p <its params file> --write`" in no_plan_line("mine", 1, 2, False)
    assert "`clusterfl plan --suite paper --write`" in no_plan_line("paper", 1, 2)
