"""The benchmark suite end to end through DVC, shrunk to seconds: 2 schemes x 3 algorithms
on scikit-learn's 8x8 digits (1,797 images, standing in for Fashion-MNIST), download ->
partition (with the validation split) -> tune -> train (--picks) -> report; the
leaderboard's numbers are recomputed here from the cells' histories."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.workspace import copy_pipeline, render

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
pytestmark = pytest.mark.slow
# two algorithms: one stage is a process that imports torch and MLflow (~7 s of CPU here)
SCHEMES, ALGORITHMS, SEEDS = ["bm_iid", "bm_rot4"], ["fedavg", "ifca"], [0, 1]


def _sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("bench")
    copy_pipeline(ws, suites=("benchmark",))
    catalogue = yaml.safe_load((ROOT / "params.yaml").read_text())
    catalogue["datasets"]["fashion_mnist_bench"] = {"source": "digits"}  # offline, tiny
    (ws / "params.yaml").write_text(yaml.safe_dump(catalogue, sort_keys=False))
    suite = yaml.safe_load((ROOT / "suites/benchmark/params.yaml").read_text())
    suite["suite"].update(
        seeds=SEEDS, training={"rounds": 2},
        partition_options={s: {"num_clients": 4} for s in SCHEMES},
        tuning={"seeds": [0], "lr": [0.02, 0.2], "clusters": {"bm_rot4": [4, 2]},
                "default_clusters": [2]},
        grid=[{"experiments": SCHEMES, "algorithms": ALGORITHMS}])
    (ws / "suites/benchmark/params.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    render(ws, env, "benchmark")
    _sh(["git", "init", "-q"], ws, env)
    _sh([str(BIN / "dvc"), "init", "-q"], ws, env)
    out = _sh([str(BIN / "dvc"), "repro", "suites/benchmark/dvc.yaml"], ws, env)
    return ws, env, out


def _last_acc(ws: Path, exp: str, alg: str) -> list[float]:
    cell = ws / "results/benchmark" / exp / alg
    return [100 * json.loads((cell / f"seed{s}/history.json").read_text())["records"][-1]
            ["test_acc"] for s in SEEDS]


def _paired_low(better: list[float], worse: list[float]) -> float:
    """The lower end of the 95 % interval of the per-seed differences better - worse."""
    diffs = np.subtract(better, worse)
    if np.ptp(diffs) == 0:
        return float(diffs[0])
    return float(np.mean(diffs) - np.tan(0.475 * np.pi) * np.std(diffs, ddof=1)
                 / np.sqrt(len(diffs)))


def test_stages_picks_and_leaderboard_match_the_histories(workspace):
    ws, env, out = workspace
    ran = {n.rsplit(":", 1)[-1] for n in re.findall(r"Running stage '([^']+)'", out)}
    cells = {f"{e}-{a}" for e in SCHEMES for a in ALGORITHMS}
    assert ran == ({"download@fashion_mnist_bench", "report"}
                   | {f"partition@{s}" for s in SCHEMES}
                   | {f"tune@{c}" for c in cells} | {f"train@{c}" for c in cells})
    # the validation split was written beside each partition, and used only by tune
    assert (ws / "data/benchmark/partitions/bm_rot4/seed0_validation.npz").exists()
    for exp in SCHEMES:
        for alg in ALGORITHMS:
            picks = json.loads((ws / f"results/benchmark/tuning/{exp}/{alg}/picks.json")
                               .read_text())
            points = 4 if (alg, exp) == ("ifca", "bm_rot4") else 2
            assert len(picks["grid"]) == points
            best = max(picks["grid"], key=lambda g: g["score"])  # the first of equal ones
            assert best["score"] == max(g["score"] for g in picks["grid"])
            assert {k: best[k] for k in picks["picked"]} == picks["picked"]
            used = json.loads((ws / f"logs/benchmark/{exp}/{alg}/tracking.json").read_text())
            assert used["params"]["schedule"]["lr"] == picks["picked"]["lr"]
            if alg == "ifca":
                assert used["params"]["algorithm"]["num_clusters"] == \
                    picks["picked"]["num_clusters"]
    board = pd.read_csv(ws / "reports/benchmark/tables/benchmark_leaderboard.csv",
                        index_col=0)
    accs = {(e, a): _last_acc(ws, e, a) for e in SCHEMES for a in ALGORITHMS}
    expected = pd.DataFrame(index=ALGORITHMS, columns=SCHEMES, dtype=float)
    for exp in SCHEMES:
        for alg in ALGORITHMS:
            values = accs[exp, alg]
            assert board.loc[alg, f"{exp}_mean"] == pytest.approx(np.mean(values), abs=1e-4)
            assert board.loc[alg, f"{exp}_std"] == pytest.approx(np.std(values), abs=1e-4)
            # 1 + the algorithms better seed by seed: the paired differences' 95 % t
            # interval (2 seeds: t(0.975, 1) = tan(0.475 pi)) lies above 0
            expected.loc[alg, exp] = 1 + sum(
                _paired_low(accs[exp, b], values) > 0 for b in ALGORITHMS if b != alg)
        assert board[f"rank_{exp}"].to_dict() == expected[exp].to_dict()
    assert board["rank_average"].to_dict() == pytest.approx(expected.mean(axis=1).to_dict())
    text = (ws / "reports/benchmark/tables/benchmark.md").read_text()
    for exp in SCHEMES:  # bold only a winner that beats every other seed by seed
        winner = expected[exp].idxmin()
        clear = int((expected[exp] == 1).sum()) == 1
        row = next(line for line in text.splitlines() if line.startswith(f"| {winner} |"))
        assert (f"**{np.mean(accs[exp, winner]):.2f} ±" in row) == clear
    board_rows = [line.split(" | ")[:2] for line in text.split("## Picks")[0].splitlines()
                  if line.startswith("| ") and not line.startswith("| algorithm")]
    assert board_rows == [[f"| {a}", board.loc[a, "family"]]  # by average rank, with family
                          for a in board["rank_average"].sort_values(kind="stable").index]
    assert "## Picks (validation split)" in text and "## Cluster recovery" in text
    cost = pd.read_csv(ws / "reports/benchmark/tables/benchmark_cost.csv", index_col=0)
    assert cost.loc["fedavg", "uploaded/round"] == 4 * (64 * 64 + 64 + 64 * 10 + 10)
    assert "seconds/round" not in cost  # wall-clock: on the costs page, outside the outs
    costs = (ws / "reports/benchmark/costs.md").read_text()
    assert all(f"bm_iid/{a}" in costs for a in ALGORITHMS) and "round_seconds (mean)" in costs
    assert (ws / "reports/benchmark/figures/benchmark_heatmap.png").stat().st_size > 0
    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name("clusterfl")
    runs = client.search_runs([experiment.experiment_id],
                              "tags.suite = 'benchmark' and tags.stage = 'train'")
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert sorted((r.data.tags["partition"], r.data.tags["algorithm"]) for r in parents) == \
        sorted((e, a) for e in SCHEMES for a in ALGORITHMS)
    assert {r.data.tags["scheme"] for r in parents} == {"iid", "rotation"}
    assert all(r.data.tags["picked"].startswith("lr=") for r in parents)


def test_my_method_is_tuned_trained_and_ranked_beside_the_baselines_by_one_command(workspace):
    """README "Your method on the leaderboard": the example plugin (examples/my_fedprox.py)
    in a suite that extends the benchmark; `clusterfl leaderboard` runs only its own cells
    (the benchmark's are up to date) and ranks it in the benchmark's leaderboard."""
    ws, env, _ = workspace
    (ws / "examples").mkdir(exist_ok=True)
    shutil.copy(ROOT / "examples/my_fedprox.py", ws / "examples/my_fedprox.py")
    (ws / "suites/mine").mkdir(exist_ok=True)
    suite = {"name": "mine", "extends": "benchmark", "plugins": ["examples/my_fedprox.py"],
             "algorithms": {"my_fedprox": {"method": "my_fedprox", "mu": 0.01}},
             "grid": [{"experiments": ["bm_rot4"], "algorithms": ["my_fedprox"]}]}
    (ws / "suites/mine/params.yaml").write_text(yaml.safe_dump({"suite": suite}))
    out = _sh([str(BIN / "clusterfl"), "leaderboard", "--suite", "mine", "--run"], ws,
              {**env, "COLUMNS": "250"})
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert ran == {"suites/mine/dvc.yaml:report"} | {
        f"suites/mine/dvc.yaml:{stage}@bm_rot4-my_fedprox" for stage in ("tune", "train")}
    board = pd.read_csv(ws / "reports/mine/tables/benchmark_leaderboard.csv", index_col=0)
    assert set(board.index) == {*ALGORITHMS, "my_fedprox"}
    # the family the plugin's class declares, beside the baselines' own
    assert board.loc["my_fedprox", "family"] == "global"
    assert board.loc["ifca", "family"] == "clustered" and board.loc["fedavg", "family"] == "global"
    # trained into the benchmark's results, like the baselines (no cell on bm_iid: no score)
    assert board.loc["my_fedprox", "bm_rot4_mean"] == pytest.approx(
        np.mean(_last_acc(ws, "bm_rot4", "my_fedprox")), abs=1e-4)
    assert np.isnan(board.loc["my_fedprox", "bm_iid_mean"])
    for exp in SCHEMES:
        assert board.loc["fedavg", f"{exp}_mean"] == pytest.approx(
            np.mean(_last_acc(ws, exp, "fedavg")), abs=1e-4)
    order = list(board.sort_values("rank_average").index)
    rows = [line.split("│") for line in out.splitlines() if line.startswith("│")]
    shown = [tuple(c.strip() for c in r[1:5]) for r in rows if r[3].strip() in order]
    # the place printed: 1 + the algorithms with a lower average rank (equal averages share
    # it, as the paired rule often leaves them on 3 seeds)
    averages = board["rank_average"]
    assert shown == [("*" if a == "my_fedprox" else "",
                      str(1 + int((averages < averages[a]).sum())), a, board.loc[a, "family"])
                     for a in order]


def test_tune_with_two_worker_processes_scores_every_point_as_one_process(workspace):
    """`clusterfl tune --jobs 2` (grid points in worker processes, finishing in any order)
    gives every grid point the score the serial DVC run gave it, and the same pick."""
    ws, env, _ = workspace
    picks = ws / "results/benchmark/tuning/bm_rot4/ifca/picks.json"
    serial = json.loads(picks.read_text())
    _sh([str(BIN / "clusterfl"), "tune", "bm_rot4", "ifca", "--suite", "benchmark",
         "--jobs", "2"], ws, env)
    parallel = json.loads(picks.read_text())
    assert len(serial["grid"]) == 4
    assert [g["scores"] for g in parallel["grid"]] == [g["scores"] for g in serial["grid"]]
    assert [{k: g[k] for k in serial["picked"]} for g in parallel["grid"]] == \
        [{k: g[k] for k in serial["picked"]} for g in serial["grid"]]
    assert parallel["picked"] == serial["picked"]


def test_sweep_tunes_then_trains_with_the_picks_and_dvc_records_both(workspace):
    """`clusterfl sweep` on a tuned suite: the out-of-date tune stages run first (worker
    processes), then the train stages with their picks (the stage's `--picks`); DVC records
    both, so only the report is left. A tune stage's picks equal its own command's."""
    ws, env, _ = workspace
    path = ws / "suites/benchmark/params.yaml"
    suite = yaml.safe_load(path.read_text())
    suite["suite"]["training"] = {"rounds": 3}  # a param of both tune and train stages
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    out = _sh([str(BIN / "clusterfl"), "sweep", "--suite", "benchmark", "--executor",
               "process", "--cpus", "2"], ws, env)
    cells = len(SCHEMES) * len(ALGORITHMS)
    assert f"sweep: {cells} tune stages out of date" in out
    assert f"{cells} of {cells} cells out of date" in out
    status = json.loads(_sh([str(BIN / "dvc"), "status", "--json", "suites/benchmark/dvc.yaml"],
                            ws, env))
    assert {name.rsplit(":", 1)[-1] for name in status} == {"report"}
    for exp in SCHEMES:
        for alg in ALGORITHMS:
            picks = json.loads((ws / f"results/benchmark/tuning/{exp}/{alg}/picks.json")
                               .read_text())
            used = json.loads((ws / f"logs/benchmark/{exp}/{alg}/tracking.json").read_text())
            assert used["params"]["schedule"]["lr"] == picks["picked"]["lr"], (exp, alg)
            if alg == "ifca":
                assert used["params"]["algorithm"]["num_clusters"] == \
                    picks["picked"]["num_clusters"]
            history = json.loads((ws / f"results/benchmark/{exp}/{alg}/seed0/history.json")
                                 .read_text())
            assert len(history["records"]) == 3
    picks = ws / "results/benchmark/tuning/bm_rot4/ifca/picks.json"
    swept = json.loads(picks.read_text())
    _sh([str(BIN / "clusterfl"), "tune", "bm_rot4", "ifca", "--suite", "benchmark"], ws, env)
    by_hand = json.loads(picks.read_text())
    assert [g["scores"] for g in swept["grid"]] == [g["scores"] for g in by_hand["grid"]]
    assert swept["picked"] == by_hand["picked"]
