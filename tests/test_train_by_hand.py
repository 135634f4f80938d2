"""docs/operations.md's "Run one stage by hand" (`clusterfl train <experiment> <algorithm>
--seed 0`) on a suite's cell never deletes the cell's other seeds: the summary is written
from every seed on disk (the same bytes as the whole cell's run, so DVC and `plan` see
nothing changed), a cell with seeds still missing is not counted done by the suite's
progress, and seeds trained with other settings are never mixed into one summary. The
same after a real `dvc repro` (then `plan` has nothing to train) is in
test_pipeline_e2e.py, on the workspace its repro already made."""

import json
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pipeline.common import SuitePaths
from pipeline.progress import FINISHED_FILE, plan_path
from tests.workspace import cli_in_process, grid

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
CELLS = [("p1_synthetic_mlr", "fedavg"), ("p1_synthetic_mlr", "pfedkm_k2")]
ENV: dict[str, str | None] = {"MLFLOW_TRACKING_URI": None, "CLUSTERFL_THREADS": "1"}


def _params(rounds: int = 2) -> str:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0, 1, 2], training={"rounds": rounds}, grid=grid(CELLS))
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=2, max_size=120)
    return yaml.safe_dump(params, sort_keys=False)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "params.yaml").write_text(_params())
    for args in (("download", "p1_synthetic"), ("partition", "p1_synthetic"),
                 ("train", *CELLS[0], "--no-track")):
        cli_in_process(ws, *args, env=ENV)
    return ws


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_training_one_seed_by_hand_keeps_the_others_and_the_same_outputs(workspace):
    cell = SuitePaths("default", workspace).cell_dir(*CELLS[0])
    whole = _files(cell)
    assert {"seed0/history.json", "seed1/history.json", "seed2/history.json"} <= set(whole)
    out = cli_in_process(workspace, "train", *CELLS[0], "--seed", "0", "--no-track", env=ENV)
    # byte for byte the whole cell's run: DVC hashes the same out, `plan` has nothing to train
    assert _files(cell) == whole
    assert json.loads((cell / "summary.json").read_text())["seeds"] == [0, 1, 2]
    out = " ".join(out.split())  # as rich wraps it
    assert "over seeds [0, 1, 2]" in out and "no results yet" not in out


def test_a_cell_with_seeds_missing_is_not_counted_done(workspace):
    paths = SuitePaths("default", workspace)
    planned = [{"cell": f"{e}-{a}", "experiment": e, "algorithm": a, "wall_seconds": 1.0}
               for e, a in CELLS]
    plan_path(paths).parent.mkdir(parents=True, exist_ok=True)
    plan_path(paths).write_text(json.dumps({"written": time.time(), "cells": planned}))
    out = cli_in_process(workspace, "train", *CELLS[1], "--seed", "1", "--no-track", env=ENV)
    assert json.loads((paths.cell_dir(*CELLS[1]) / "summary.json").read_text())["seeds"] == [1]
    assert not (paths.log_dir(*CELLS[1]) / FINISHED_FILE).exists()
    assert "seeds [0, 2] of suite 'default' have no results yet" in " ".join(out.split())
    assert "0 of 2 cells done" in out


def test_seeds_trained_with_other_settings_are_not_mixed_in(workspace):
    from pipeline.cli import app

    cell = SuitePaths("default", workspace).cell_dir(*CELLS[0])
    whole = _files(cell)
    (workspace / "other.yaml").write_text(_params(rounds=3))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workspace)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        result = CliRunner().invoke(app, ["train", *CELLS[0], "--seed", "0", "--no-track",
                                          "-p", "other.yaml"])
    assert result.exit_code == 2, result.output
    assert "seeds [1, 2] were trained with other settings" in result.output
    assert len(result.output.strip().splitlines()) == 1  # one line (soft-wrapped)
    assert _files(cell) == whole  # nothing touched
