"""The last traps a newcomer met (issue 53, item 5): each is one line and a non-zero exit with
nothing overwritten, or (a diverged run, an orphan checkpoint, a wide table) says or does
the right thing. Fast: a shrunk default suite (9 clients, 2 rounds, one seed) whose data is
made once for the file."""

import copy
import errno
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from clusterfl.core.errors import UserError
from pipeline.cli import app
from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
RAW = yaml.safe_load((ROOT / "params.yaml").read_text())
CELL = ("p1_synthetic_mlr", "fedavg")


def _params(**training: Any) -> dict[str, Any]:
    """The default suite shrunk to 9 clients, one seed, 2 rounds (and `training`)."""
    raw = copy.deepcopy(RAW)
    raw["suite"].update(seeds=[0], training={"rounds": 2, **training})
    raw["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    return raw


def _write(path: Path, raw: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _cli(ws: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """`clusterfl ARGS` in `ws`, in this process (exit code, output)."""
    from clusterfl.run.execution import _dataset

    _dataset.cache_clear()  # keyed by a relative path: another workspace's file
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ws)
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        return CliRunner().invoke(app, list(args))


def _one_line(result: Result, *parts: str, code: int = 2, after: int = 0) -> str:
    """The error line of `result`, its whole output but for `after` progress lines first."""
    lines = result.output.strip().splitlines()[after:]
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (what "nothing was overwritten" compares)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()} if root.exists() else {}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shrunk suite's dataset and partition, made once."""
    ws = tmp_path_factory.mktemp("data")
    _write(ws / "params.yaml", _params())
    for args in (("download", "p1_synthetic"), ("partition", "p1_synthetic")):
        cli_in_process(ws, *args, params=None)
    return ws / "data"


@pytest.fixture
def ws(tmp_path: Path, data: Path) -> Path:
    """A repository with the shrunk default suite and its data (a copy: tests write)."""
    import shutil

    _write(tmp_path / "params.yaml", _params())
    shutil.copytree(data, tmp_path / "data")
    return tmp_path


# -- params ---------------------------------------------------------------------------------
def test_a_copied_suite_folder_whose_name_was_not_changed_is_refused(tmp_path: Path) -> None:
    """`dvc repro suites/mycopy/dvc.yaml` ran `--suite mytest`: trained the other suite's
    cells and rewrote results/mytest. Now every command that reads the copy says so."""
    from clusterfl.run.config import load_params

    _write(tmp_path / "params.yaml", RAW)
    suite = {"name": "mytest", "seeds": [0], "grid": [
        {"experiments": [CELL[0]], "algorithms": [CELL[1]]}]}
    _write(tmp_path / "suites/mytest/params.yaml", {"suite": suite})
    _write(tmp_path / "suites/mycopy/params.yaml", {"suite": suite})
    assert load_params(tmp_path / "suites/mytest/params.yaml").suite == "mytest"
    message = ("suites/mycopy/params.yaml:suite.name: 'mytest' is not its folder's name "
               "'mycopy'")
    with pytest.raises(UserError, match=message):
        load_params(tmp_path / "suites/mycopy/params.yaml")
    for args in (["render", "mycopy"], ["train", *CELL, "--suite", "mycopy", "--no-track"],
                 ["partition", "p1_synthetic", "--suite", "mycopy"]):
        _one_line(_cli(tmp_path, *args), message, "set name: mycopy")
    assert not (tmp_path / "suites/mycopy/dvc.yaml").exists()
    # the folder copied with its dvc.yaml (stages `--suite mytest`): `dvc repro` of the copy
    stage = "train@p1_synthetic_mlr-fedavg"
    copied = {"DVC_ROOT": str(tmp_path), "DVC_STAGE": f"suites/mycopy/dvc.yaml:{stage}"}
    _one_line(_cli(tmp_path, "train", *CELL, "--suite", "mytest", "--no-track", env=copied),
              f"suites/mycopy/dvc.yaml: its stage {stage} runs `--suite mytest`, whose "
              "pipeline is suites/mytest/dvc.yaml", "nothing was run: set suite.name: mycopy "
              "in suites/mycopy/params.yaml, then run `clusterfl render mycopy`")
    own = _cli(tmp_path, "train", *CELL, "--suite", "mytest", "--no-track",
               env={**copied, "DVC_STAGE": f"suites/mytest/dvc.yaml:{stage}"})
    assert "its stage" not in own.output and "data/mytest/raw" in own.output  # no data yet
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize(("seeds", "message"), [
    ([-1], "params.yaml:suite.seeds[0]: expected an integer in 0 .. 4294967295 (seeds are "
           "distinct non-negative integers), got -1"),
    ([0, 0], "params.yaml:suite.seeds[1]: seed 0 is listed twice"),
    ([0, True], "params.yaml:suite.seeds[1]: expected an integer in 0 .. 4294967295"),
])
def test_seeds_are_distinct_non_negative_integers(tmp_path: Path, seeds: list[Any],
                                                  message: str) -> None:
    """`seeds: [-1]` was a numpy traceback in `partition`; `[0, 0]` a summary "over seeds
    [0, 0]" with every std 0.00."""
    raw = _params()
    raw["suite"]["seeds"] = seeds
    _write(tmp_path / "params.yaml", raw)
    for args in (["partition", "p1_synthetic"], ["train", *CELL, "--no-track"]):
        _one_line(_cli(tmp_path, *args, "-p", "params.yaml"), message)
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()


def test_a_number_that_overflows_the_models_float32_is_refused_when_read(tmp_path: Path
                                                                         ) -> None:
    """`lr: 1e300` was an 83-line torch traceback after the data was loaded."""
    from clusterfl.run.config import load_params

    path = _write(tmp_path / "params.yaml", _params(lr=1e300))
    message = ("params.yaml:suite.training.lr: 1e+300 overflows float32, the models' dtype; "
               "allowed: numbers of magnitude up to 3.403e+38")
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("+", r"\+")):
        load_params(path).experiment(CELL[0])
    _one_line(_cli(tmp_path, "train", *CELL, "--no-track", "-p", "params.yaml"), message)
    assert not (tmp_path / "results").exists()
    _write(tmp_path / "params.yaml", _params(lr=3e38))  # within float32: accepted
    assert load_params(path).experiment(CELL[0]).schedule.lr == 3e38


def test_an_empty_tracking_experiment_is_a_validation_error(tmp_path: Path) -> None:
    """It was reported as "MLflow store unreachable (AttributeError ...)"."""
    raw = _params()
    raw["tracking"]["experiment"] = ""
    _write(tmp_path / "params.yaml", raw)
    _one_line(_cli(tmp_path, "train", *CELL, "-p", "params.yaml"),
              "params.yaml:tracking.experiment: expected the name of an MLflow experiment "
              "(a non-empty string; default: clusterfl), got ''")
    assert not (tmp_path / "results").exists()


# -- training -------------------------------------------------------------------------------
def test_clients_per_round_above_the_clients_is_refused_naming_its_key(ws: Path) -> None:
    _write(ws / "params.yaml", _params(clients_per_round=1000))
    _one_line(_cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml"),
              "params.yaml:suite.training.clients_per_round: 1000 is more than the 9 clients "
              "of partition 'p1_synthetic' (data/default/partitions/p1_synthetic/seed0.npz); "
              "allowed: 1 to 9, or unset for every client")
    assert not (ws / "results").exists() and not (ws / "checkpoints").exists()


def test_a_diverged_run_says_so_with_its_round_and_the_summary_marks_it(ws: Path) -> None:
    """`lr: 1e30` trained to a test loss of 1e31 with exit 0 and no word of it."""
    _write(ws / "params.yaml", _params(lr=1e30))
    result = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    assert result.exit_code == 0, result.output
    warning = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1, result.output
    assert warning[0].startswith("warning: p1_synthetic_mlr/fedavg/seed0: diverged: test_loss ")
    assert "at round 1 (exploded)" in warning[0]
    assert "; seed 0 diverged (test_loss at round 1)" in result.output  # the summary line
    summary = json.loads((ws / "results/default" / "/".join(CELL) / "summary.json").read_text())
    assert summary["diverged"] == [{"seed": 0, "round": 1, "metric": "test_loss"}]
    # a normal run: no warning, and its summary has no such key (its bytes are as before)
    _write(ws / "params.yaml", _params())
    normal = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    assert normal.exit_code == 0 and "diverged" not in normal.output, normal.output
    summary = json.loads((ws / "results/default" / "/".join(CELL) / "summary.json").read_text())
    assert "diverged" not in summary and summary["seeds"] == [0]


def test_divergence_is_a_non_finite_loss_or_one_that_exploded() -> None:
    from clusterfl.training.history import divergence

    def run(*losses: float, name: str = "test_loss") -> list[dict[str, float]]:
        return [{"round": i + 1, "test_acc": 0.5, name: v} for i, v in enumerate(losses)]

    def at(records: list[dict[str, float]]) -> tuple[int, str] | None:
        found = divergence(records)
        return None if found is None else (found.round, found.metric)

    assert at(run(2.3, 1.9, 1.2)) is None
    assert at(run(2.3, 40.0, 900.0)) is None  # bad, but no explosion
    assert at(run(2.3, 2.0, float("nan"))) == (3, "test_loss")
    assert at(run(2.3, 5000.0)) == (2, "test_loss")  # above 1e3 x the first round's
    assert at(run(7e30, 9e30)) == (1, "test_loss")  # exploded from the start: above 1e6
    assert at(run(1.0, float("inf"), name="test_mse")) == (2, "test_mse")
    assert at(run(1.0, 2e8, name="test_mse")) is None  # a regression's own scale


def test_a_second_train_of_a_cell_being_trained_is_refused_and_changes_nothing(ws: Path
                                                                              ) -> None:
    """Two `clusterfl train` of one cell at once trained a seed twice, each writing it."""
    from pipeline.common import cell_lock

    cell = ws / "results/default" / "/".join(CELL)
    before = _tree(ws / "results")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ws)
        with cell_lock(Path("results/default") / "/".join(CELL)):  # a train holds it
            lock = ws / "results/default" / CELL[0] / f".lock-{CELL[1]}"
            assert lock.read_text() == f"{os.getpid()}\n"
            result = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    _one_line(result, f"results/default/{CELL[0]}/{CELL[1]}: is being trained by pid "
                      f"{os.getpid()} (it holds results/default/{CELL[0]}/.lock-{CELL[1]}); "
                      "wait for it to finish, or stop it, then run this again", code=1)
    assert _tree(ws / "results") == before and not lock.exists()
    assert not (ws / "checkpoints").exists() and not (ws / "logs").exists()
    done = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")  # free again
    assert done.exit_code == 0, done.output
    assert (cell / "seed0/history.json").exists() and not lock.exists()


def test_an_orphan_checkpoint_is_removed_once_its_seed_is_complete(ws: Path) -> None:
    """Ctrl-C in `dvc repro`, then a `dvc repro` that restored the cell from DVC's run cache:
    the interrupted run's checkpoint stayed (35 MB of a CNN). A later train (or report, or
    `clusterfl reproduce`) removes it; a checkpoint newer than its seed's history (a run
    stopped before it replaced the cell) stays, and so does one of a cell being trained."""
    import time

    done = _cli(ws, "train", CELL[0], "local", "--no-track", "-p", "params.yaml")
    assert done.exit_code == 0, done.output
    top = ws / "checkpoints/default" / CELL[0]
    orphan, newer = top / "local/seed0", top / "pfedme/seed0"

    def plant(folder: Path, when: float) -> None:
        folder.mkdir(parents=True)
        (folder / "state.pt").write_bytes(b"state")
        os.utime(folder / "state.pt", (when, when))

    plant(orphan, time.time() - 60)  # written before the seed's history was placed
    history = ws / "results/default" / CELL[0] / "pfedme/seed0/history.json"
    history.parent.mkdir(parents=True)
    history.write_text("{}")
    plant(newer, time.time() + 60)  # written after it: what that run resumes from
    result = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    assert result.exit_code == 0, result.output
    assert not orphan.exists() and newer.exists()
    assert (f"checkpoints/default/{CELL[0]}/local/seed0: removed an orphan checkpoint (its "
            f"seed is complete in results/default/{CELL[0]}/local)") in result.output
    assert (ws / "results/default" / CELL[0] / "local/seed0/history.json").exists()

    from pipeline.common import cell_lock

    plant(orphan, time.time() - 60)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ws)
        with cell_lock(Path("results/default") / CELL[0] / "local"):  # being trained: kept
            result = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    assert result.exit_code == 0, result.output
    assert orphan.exists() and newer.exists()


def test_a_full_disk_names_the_file_and_leaves_the_cell_as_it_was(ws: Path) -> None:
    """It said "cannot write (No space left on device)" and named no path."""
    first = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    assert first.exit_code == 0, first.output
    before = _tree(ws / "results")
    real = Path.write_text

    def full(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name.startswith(".history.json."):  # the atomic write's temporary file
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "write_text", full)
        result = _cli(ws, "train", *CELL, "--no-track", "-p", "params.yaml")
    _one_line(result, f"error: results/default/{CELL[0]}/{CELL[1]}/seed0/history.json: "
                      "cannot write (No space left on device); nothing was changed there",
              after=2)  # the cell's line and its seed's progress line
    assert _tree(ws / "results") == before
    assert not list((ws / "results/default" / CELL[0]).glob(f".{CELL[1]}.*"))


def test_hints_name_the_suite(ws: Path) -> None:
    """`--picks missing.json` said `clusterfl tune ...` without --suite (tune defaults to the
    benchmark)."""
    _one_line(_cli(ws, "train", *CELL, "--no-track", "--picks", "missing.json", "-p",
                   "params.yaml"),
              "missing.json: missing; run `clusterfl tune p1_synthetic_mlr fedavg --suite "
              "default` first")
    _write(ws / "mine.yaml", {**_params(), "suite": {**_params()["suite"], "name": "mine"}})
    _one_line(_cli(ws, "train", *CELL, "--no-track", "--picks", "missing.json", "-p",
                   "mine.yaml"), "`clusterfl tune p1_synthetic_mlr fedavg -p mine.yaml` first")


def test_plan_before_render_says_to_render(tmp_path: Path) -> None:
    """It said "dvc.yaml does not exist" (DVC's words) and no more."""
    _write(tmp_path / "params.yaml", RAW)
    suite = {"name": "x", "seeds": [0], "grid": [
        {"experiments": [CELL[0]], "algorithms": [CELL[1]]}]}
    _write(tmp_path / "suites/x/params.yaml", {"suite": suite})
    _one_line(_cli(tmp_path, "plan", "--suite", "x", "--no-probe"),
              "suites/x/dvc.yaml: does not exist (suite suites/x/params.yaml is not rendered "
              "yet); run `clusterfl render x` first")
    assert not (tmp_path / "logs").exists()


# -- clusterfl ui ---------------------------------------------------------------------------
@pytest.fixture
def no_exec(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """`os.execv` recorded, not run (the UI would replace this process)."""
    calls: list[list[str]] = []
    monkeypatch.setattr(os, "execv", lambda path, argv: calls.append(list(argv)))
    return calls


def test_ui_checks_its_port_before_printing_a_link(tmp_path: Path,
                                                   no_exec: list[list[str]]) -> None:
    """A busy port and `--port 99999` printed "open http://..." and then failed with exit 0
    (the second with a traceback)."""
    _write(tmp_path / "params.yaml", RAW)
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = _one_line(_cli(tmp_path, "ui", "--port", str(port), env=env),
                         f"--port: 127.0.0.1:{port} is in use by another process; stop it "
                         "or pick another port (--port)")
    assert "http" not in line
    _one_line(_cli(tmp_path, "ui", "--port", "99999", env=env),
              "--port: expected a port in 1 .. 65535, got 99999")
    assert no_exec == []
    with socket.socket() as free:  # a free port: the link, then the UI
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = _cli(tmp_path, "ui", "--port", str(port), env=env)
    assert result.exit_code == 0 and f"open http://127.0.0.1:{port}/" in result.output
    assert no_exec and no_exec[0][-1] == str(port)


def test_ui_reports_a_corrupt_store_in_one_line(tmp_path: Path,
                                                no_exec: list[list[str]]) -> None:
    """`train` warned well; `clusterfl ui` gave a 106-line traceback."""
    _write(tmp_path / "params.yaml", RAW)
    (tmp_path / "mlflow.db").write_bytes(b"not a database " * 100)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    _one_line(_cli(tmp_path, "ui", "--port", str(port),
                   env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}),
              f"{tmp_path / 'mlflow.db'}: the MLflow store cannot be read (DatabaseError: ",
              "move the file away")
    assert no_exec == []


# -- tables ---------------------------------------------------------------------------------
def _fits(result: Result, width: int = 80) -> list[str]:
    assert result.exit_code == 0, (result.output, result.exception)
    lines = result.output.splitlines()
    assert max(len(line) for line in lines if not line.startswith("note:")) <= width
    assert "…" not in result.output, result.output
    return lines


def test_tables_piped_at_80_columns_fit_without_a_cut_cell(tmp_path: Path) -> None:
    """`leaderboard`, `compare` and `list algorithms` cut every cell ("f…"), and `list
    algorithms` was 2,331 lines: a table that does not fit prints as records."""
    from clusterfl.training.history import RunHistory

    env = {"COLUMNS": "80"}
    board = _fits(_cli(ROOT, "leaderboard", env=env))
    assert any(line.startswith("1  ") for line in board)
    assert any("rot4: " in line for line in board)
    listing = _fits(_cli(ROOT, "list", "algorithms", env=env))
    assert "p1  fedavg" in listing and len(listing) < 1000
    assert any(line.startswith("  method: fedavg") for line in listing)
    for tree in ("a", "b"):
        history = RunHistory(primary="test_acc")
        history.append({"round": 1, "test_acc": 0.5})
        history.write(tmp_path / tree / "p1_synthetic_mlr_with_a_long_name" / "pfedkm_k4"
                      / "seed0")
    compared = _fits(_cli(tmp_path, "compare", "a", "b", env=env))
    assert "p1_synthetic_mlr_with_a_long_name/pfedkm_k4/seed0" in compared
    assert "1 of 1 histories in both trees equal (tolerance 0.0)" in compared[-1]
    # a table that fits stays a table
    wide = _cli(tmp_path, "compare", "a", "b", env={"COLUMNS": "200"})
    assert "┃ history" in wide.output
