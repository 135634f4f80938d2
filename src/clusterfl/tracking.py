"""The MLflow adapter: the only module that imports MLflow.

One parent run per trained cell (experiment x algorithm) holding its params, tags and the
mean over seeds; one nested run per seed holding the per-round curves (one `log_batch` call
per round). Everything goes through an explicit `MlflowClient`, never global run state.
"""

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

ROOT_MARKER = "params.yaml"


def default_tracking_uri(root: Path | None = None) -> str:
    """`MLFLOW_TRACKING_URI` if set, else an absolute sqlite file in the repo root."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = (root or Path.cwd()).resolve()
    return f"sqlite:///{root / 'mlflow.db'}"


def git_commit(cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def params_hash(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]


def flatten(params: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in params.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out |= flatten(v, f"{name}.")
        else:
            out[name] = str(v)
    return out


def _experiment_id(client: Any, name: str) -> str:
    """The id of experiment `name`, created if missing; another writer creating it at the
    same moment (several workers on one server) is not an error."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(name)
    except MlflowException:
        return client.get_experiment_by_name(name).experiment_id


class CellTracker:
    """Creates the parent run of a cell and one child run per seed."""

    def __init__(self, experiment: str, run_name: str, params: dict[str, Any],
                 tags: dict[str, str], uri: str | None = None) -> None:
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(uri or default_tracking_uri())
        self.experiment_id = _experiment_id(self.client, experiment)
        self.params = flatten(params)
        self.tags = {**tags, "params_hash": params_hash(params)}
        self.run_name = run_name
        self.parent = self.client.create_run(self.experiment_id, run_name=run_name, tags=self.tags)
        self._log_params(self.parent.info.run_id)

    def _log_params(self, run_id: str) -> None:
        from mlflow.entities import Param

        items = [Param(k, v[:6000]) for k, v in self.params.items()]
        for start in range(0, len(items), 100):  # MLflow caps params per batch at 100
            self.client.log_batch(run_id, params=items[start : start + 100])

    def seed_callback(self, seed: int) -> "SeedRunCallback":
        tags = {**self.tags, "mlflow.parentRunId": self.parent.info.run_id, "seed": str(seed)}
        # the cell in the name: a flat view of runs (or a search) is unambiguous
        run = self.client.create_run(self.experiment_id, run_name=f"{self.run_name}/seed{seed}",
                                     tags=tags)
        self._log_params(run.info.run_id)
        return SeedRunCallback(self.client, run.info.run_id)

    def finish(self, summary: dict[str, float], status: str = "FINISHED") -> None:
        from mlflow.entities import Metric

        run_id = self.parent.info.run_id
        metrics = [Metric(k, float(v), 0, 0) for k, v in summary.items()]
        if metrics:
            self.client.log_batch(run_id, metrics=metrics)
        self.client.set_terminated(run_id, status)


class SeedRunCallback:
    """Logs one seed's per-round metrics: exactly one MLflow call per round."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client = client
        self.run_id = run_id

    def on_run_start(self, info: dict[str, Any]) -> None:
        pass

    def on_round_end(self, round_: int, metrics: dict[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        batch = [Metric(k, float(v), stamp, round_) for k, v in metrics.items() if k != "round"]
        self.client.log_batch(self.run_id, metrics=batch)

    def on_run_end(self, summary: dict[str, float]) -> None:
        self.client.set_terminated(self.run_id, "FINISHED")
